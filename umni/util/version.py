"""umni's release number, kept at the bottom layer so every layer may record it (run manifests,
`umni --version`) without importing the package's top."""

__version__ = "0.1.0"
