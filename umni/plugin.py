"""The one front for code that extends umni: a backend (a model behind roles) or a protocol (a benchmark).

`graphs/`, `adapters/`, the plugin template and any third-party plugin import from here (or from
`umni` for running things), never from umni's sub-packages, whose layout may change between releases;
an import-linter contract in `pyproject.toml` holds umni's own plugins to it. Names load on first use,
as `umni`'s do, so a plugin module that imports `Spec` does not pull in the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from umni.util.lazy import lazy_front

#: Public name -> module that defines it.
_EXPORTS = {
    # a backend: the base class, its parameters and the spec it is made from
    "Backend": "umni.backends.contract",
    "BackendParams": "umni.backends.contract",
    "parse_params": "umni.backends.contract",
    "Spec": "umni.util.spec",
    # roles: their names and the interface a backend implements for each
    "UNDERSTAND": "umni.backends.roles",
    "GENERATE": "umni.backends.roles",
    "EDIT": "umni.backends.roles",
    "JUDGE": "umni.backends.roles",
    "CRITIC": "umni.backends.roles",
    "OCR": "umni.backends.roles",
    "DETECT": "umni.backends.roles",
    "EMBED": "umni.backends.roles",
    "MODEL_ROLES": "umni.backends.roles",
    "TOOL_ROLES": "umni.backends.roles",
    "ROLE_INTERFACE": "umni.backends.roles",
    "Understander": "umni.backends.roles",
    "Generator": "umni.backends.roles",
    "Editor": "umni.backends.roles",
    "TextReader": "umni.backends.roles",
    "ObjectDetector": "umni.backends.roles",
    "ImageEmbedder": "umni.backends.roles",
    "register_tool_role": "umni.backends.roles",
    # what a backend returns
    "Part": "umni.backends.roles",
    "TextReply": "umni.backends.roles",
    "ChoiceReply": "umni.backends.roles",
    "ImageReply": "umni.backends.roles",
    "OcrLine": "umni.backends.roles",
    "Detection": "umni.backends.roles",
    "Usage": "umni.backends.roles",
    "RequestOptions": "umni.backends.roles",
    "option_letter": "umni.backends.roles",
    "parse_choice": "umni.util.choices",
    # errors: a failure belongs to the node that met it and is never turned into a score
    "UmniError": "umni.util.errors",
    "InputError": "umni.util.errors",
    "InputErrors": "umni.util.errors",
    "ConfigError": "umni.util.errors",
    "BackendError": "umni.util.errors",
    "ParseFailure": "umni.util.errors",
    "InvalidAnswer": "umni.util.errors",
    "Refusal": "umni.util.errors",
    "DegenerateOutput": "umni.util.errors",
    "StorageError": "umni.util.errors",
    "missing_extra_hint": "umni.util.extras",
    # secrets: what a backend must never write to a file, a message or a log
    "register_secret": "umni.util.secrets",
    "mask": "umni.util.secrets",
    "scrub": "umni.util.secrets",
    "truncate": "umni.util.secrets",
    # images and content hashes
    "check_image_file": "umni.store.images",
    "encode_png": "umni.store.images",
    "fingerprint": "umni.store.hashing",
    "file_sha256": "umni.util.filehash",
    # a protocol: its graph, cases, records and scores
    "Protocol": "umni.protocols.protocol",
    "CaseSet": "umni.protocols.protocol",
    "Note": "umni.protocols.protocol",
    "Skipped": "umni.protocols.protocol",
    "View": "umni.protocols.protocol",
    "RoleTemplate": "umni.protocols.protocol",
    "node_status": "umni.protocols.protocol",
    "HeadlineParts": "umni.protocols.headline",
    "Scores": "umni.protocols.scores",
    "Number": "umni.util.jsonmodel",
    "CaseRecord": "umni.store.runfolder",
    "NodeRecord": "umni.store.runfolder",
    "FailureRecord": "umni.store.runfolder",
    # what a backend says of how it made a role's outputs (`Backend.provenance`)
    "RoleProvenance": "umni.store.runfolder",
    "Sampling": "umni.store.runfolder",
    "Graph": "umni.graph.graph",
    "Node": "umni.graph.nodes",
    "Ref": "umni.graph.nodes",
    "ImageFile": "umni.graph.nodes",
    "PromptPart": "umni.graph.nodes",
    "Outcome": "umni.graph.outcomes",
    "Failure": "umni.graph.outcomes",
    "failure_kind": "umni.graph.outcomes",
    "first_failure": "umni.graph.outcomes",
    "ok_output": "umni.graph.outcomes",
    "record_status": "umni.graph.outcomes",
    # reading a benchmark's case files: one clear line per bad field, paths kept inside the case folder
    "read_json": "umni.util.jsonfiles",
    "read_jsonl": "umni.protocols.caseio",
    "read_json_records": "umni.protocols.caseio",
    "validate_records": "umni.protocols.caseio",
    "field_errors": "umni.protocols.caseio",
    "raise_if_any": "umni.protocols.caseio",
    "confined_path": "umni.protocols.caseio",
    "shown_missing": "umni.protocols.caseio",
}

__all__ = list(_EXPORTS)

if TYPE_CHECKING:
    from umni.backends.contract import Backend as Backend
    from umni.backends.contract import BackendParams as BackendParams
    from umni.backends.contract import parse_params as parse_params
    from umni.backends.roles import CRITIC as CRITIC
    from umni.backends.roles import DETECT as DETECT
    from umni.backends.roles import EDIT as EDIT
    from umni.backends.roles import EMBED as EMBED
    from umni.backends.roles import GENERATE as GENERATE
    from umni.backends.roles import JUDGE as JUDGE
    from umni.backends.roles import MODEL_ROLES as MODEL_ROLES
    from umni.backends.roles import OCR as OCR
    from umni.backends.roles import ROLE_INTERFACE as ROLE_INTERFACE
    from umni.backends.roles import TOOL_ROLES as TOOL_ROLES
    from umni.backends.roles import UNDERSTAND as UNDERSTAND
    from umni.backends.roles import ChoiceReply as ChoiceReply
    from umni.backends.roles import Detection as Detection
    from umni.backends.roles import Editor as Editor
    from umni.backends.roles import Generator as Generator
    from umni.backends.roles import ImageEmbedder as ImageEmbedder
    from umni.backends.roles import ImageReply as ImageReply
    from umni.backends.roles import ObjectDetector as ObjectDetector
    from umni.backends.roles import OcrLine as OcrLine
    from umni.backends.roles import Part as Part
    from umni.backends.roles import RequestOptions as RequestOptions
    from umni.backends.roles import TextReader as TextReader
    from umni.backends.roles import TextReply as TextReply
    from umni.backends.roles import Understander as Understander
    from umni.backends.roles import Usage as Usage
    from umni.backends.roles import option_letter as option_letter
    from umni.backends.roles import register_tool_role as register_tool_role
    from umni.graph.graph import Graph as Graph
    from umni.graph.nodes import ImageFile as ImageFile
    from umni.graph.nodes import Node as Node
    from umni.graph.nodes import PromptPart as PromptPart
    from umni.graph.nodes import Ref as Ref
    from umni.graph.outcomes import Failure as Failure
    from umni.graph.outcomes import Outcome as Outcome
    from umni.graph.outcomes import failure_kind as failure_kind
    from umni.graph.outcomes import first_failure as first_failure
    from umni.graph.outcomes import ok_output as ok_output
    from umni.graph.outcomes import record_status as record_status
    from umni.protocols.caseio import confined_path as confined_path
    from umni.protocols.caseio import field_errors as field_errors
    from umni.protocols.caseio import raise_if_any as raise_if_any
    from umni.protocols.caseio import read_json_records as read_json_records
    from umni.protocols.caseio import read_jsonl as read_jsonl
    from umni.protocols.caseio import shown_missing as shown_missing
    from umni.protocols.caseio import validate_records as validate_records
    from umni.protocols.headline import HeadlineParts as HeadlineParts
    from umni.protocols.protocol import CaseSet as CaseSet
    from umni.protocols.protocol import Note as Note
    from umni.protocols.protocol import Protocol as Protocol
    from umni.protocols.protocol import RoleTemplate as RoleTemplate
    from umni.protocols.protocol import Skipped as Skipped
    from umni.protocols.protocol import View as View
    from umni.protocols.protocol import node_status as node_status
    from umni.protocols.scores import Scores as Scores
    from umni.store.hashing import fingerprint as fingerprint
    from umni.store.images import check_image_file as check_image_file
    from umni.store.images import encode_png as encode_png
    from umni.store.runfolder import CaseRecord as CaseRecord
    from umni.store.runfolder import FailureRecord as FailureRecord
    from umni.store.runfolder import NodeRecord as NodeRecord
    from umni.store.runfolder import RoleProvenance as RoleProvenance
    from umni.store.runfolder import Sampling as Sampling
    from umni.util.choices import parse_choice as parse_choice
    from umni.util.errors import BackendError as BackendError
    from umni.util.errors import ConfigError as ConfigError
    from umni.util.errors import DegenerateOutput as DegenerateOutput
    from umni.util.errors import InputError as InputError
    from umni.util.errors import InputErrors as InputErrors
    from umni.util.errors import InvalidAnswer as InvalidAnswer
    from umni.util.errors import ParseFailure as ParseFailure
    from umni.util.errors import Refusal as Refusal
    from umni.util.errors import StorageError as StorageError
    from umni.util.errors import UmniError as UmniError
    from umni.util.extras import missing_extra_hint as missing_extra_hint
    from umni.util.filehash import file_sha256 as file_sha256
    from umni.util.jsonfiles import read_json as read_json
    from umni.util.jsonmodel import Number as Number
    from umni.util.secrets import mask as mask
    from umni.util.secrets import register_secret as register_secret
    from umni.util.secrets import scrub as scrub
    from umni.util.secrets import truncate as truncate
    from umni.util.spec import Spec as Spec

__getattr__, __dir__ = lazy_front(__name__, _EXPORTS, globals())
