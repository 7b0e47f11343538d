"""The SDK's stream subscripts a pydantic generic (its snapshot message) on
every reply; pydantic keeps such a class only while it is referred to, so a
process made it anew at every reply once the garbage collector had run
(integrations/anthropic/parsers.py keeps it). Checked in a fresh interpreter:
after the first reply, and a collection, no reply builds a generic class."""

from __future__ import annotations

import json
import textwrap

from tests.fresh_process import last_line_of
from tests.integrations.anthropic.test_it_builds_the_response_parsers_ahead import (
    EVENTS,
)

SCRIPT = textwrap.dedent(
    """
    import gc, json, sys
    from pydantic._internal import _generics

    if sys.argv[1] == "unkept":
        import integrations.anthropic.parsers as parsers
        parsers.KEPT_GENERICS = ()
    from tests.integrations.anthropic.streamed import streaming_client

    client = streaming_client(json.loads(sys.argv[2]))
    built = []
    original = _generics.create_generic_submodel

    def counting(*args, **kwargs):
        built.append(args[0])
        return original(*args, **kwargs)

    _generics.create_generic_submodel = counting
    import pydantic.main
    pydantic.main._generics.create_generic_submodel = counting
    client.send(messages=[{"role": "user", "content": "hi"}])
    first = len(built)
    for _ in range(3):
        gc.collect()
        reply = client.send(messages=[{"role": "user", "content": "hi"}])
        assert reply.stop_reason == "tool_use"
    print(json.dumps([first, len(built) - first]))
    """
)


def generics_built(mode: str) -> tuple[int, int]:
    """Generic classes built by the first reply and by three more."""
    first, later = json.loads(last_line_of(SCRIPT, mode, json.dumps(EVENTS)))
    return first, later


def test_it_builds_no_generic_class_per_reply():
    # The control: without the kept class, every reply after a collection
    # builds it again.
    assert generics_built("unkept")[1] == 3
    assert generics_built("kept") == (0, 0)
