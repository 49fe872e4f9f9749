"""Small utilities every layer may use and that use nothing of umni above them, one module each:
`errors` (the error types), `secrets` (scrubbing credentials from text), `filehash`, `codeid` (code
fingerprints for cache keys), `storage` (guards that turn disk faults into StorageError, locks),
`events` (the event log), `progress`, `tasks` (the node task set), `policy` (retry and cache
policies), `spec` (backend spec parsing), `sharding`, `choices` (answer-choice parsing), `extras`
(optional dependencies) and `version`.

Import them by module (`from umni.util.errors import ConfigError`): the package re-exports nothing,
so that reading the release number or an error type never loads the rest.
"""
