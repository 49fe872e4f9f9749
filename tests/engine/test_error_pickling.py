"""Every umni error survives pickling with its message and attributes: errors raised in another
process (a Ray replica, a worker) reach the driver as the same typed failure."""

import inspect
import pickle

import pytest

import umni.util.errors as E


def examples() -> list[E.UmniError]:
    made: list[E.UmniError] = [
        E.BackendError("server busy", retryable=True, retry_after=2.5),
        E.InputError("bad field", path="cases.json", record=3, field="prompt", line=7),
        E.InputErrors([E.InputError("one", path="a.json"), E.InputError("two", path="b.json", line=2)]),
        E.ConfigError("unknown provider", field="spec"),
        E.ParseFailure("no score line", raw="I like it"),
        E.InvalidAnswer("mark 7", raw="Score: 7"),
        E.Refusal("declined", raw="I can't help with that"),
        E.DegenerateOutput("1x1 image"),
        E.OutputFailure("unusable", raw="?"),
        E.StorageError("disk full", path="/tmp/run"),
        E.UmniError("plain"),
    ]
    listed = {type(e) for e in made}
    every = {cls for _, cls in inspect.getmembers(E, inspect.isclass) if issubclass(cls, E.UmniError)}
    assert every <= listed, f"add an example of {sorted(c.__name__ for c in every - listed)}"
    return made


@pytest.mark.parametrize("error", examples(), ids=lambda e: type(e).__name__)
def test_errors_pickle_with_message_and_attributes(error):
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert str(back) == str(error)
    assert comparable(back) == comparable(error)


def comparable(value: object) -> object:
    """Exceptions compare by identity; compare their type, text and attributes instead (nested too)."""
    if isinstance(value, BaseException):
        return (type(value), str(value), {k: comparable(v) for k, v in value.__dict__.items()})
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value
