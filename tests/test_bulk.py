"""`without_gc`: the collector is paused while a bulk build runs and resumed after, whatever happens."""

import gc

import pytest

from imagenot.bulk import without_gc


@without_gc
def _collector_state(fail: bool = False) -> bool:
    if fail:
        raise ValueError("the build failed")
    return gc.isenabled()


def test_the_collector_is_paused_during_the_build_and_resumed_after_it_or_its_error():
    assert gc.isenabled()
    assert _collector_state() is False and gc.isenabled()
    with pytest.raises(ValueError, match="the build failed"):
        _collector_state(fail=True)
    assert gc.isenabled()


def test_a_collector_the_caller_paused_stays_paused():
    gc.disable()
    try:
        assert _collector_state() is False
        assert not gc.isenabled()
    finally:
        gc.enable()
