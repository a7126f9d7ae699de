"""megatron_missing() looks for what verl's Megatron engine imports: megatron.core, the bridge verl's config selects
(megatron.bridge by default, mbridge with vanilla_mbridge=True) and TransformerEngine's PyTorch layers. Stand-in
packages on sys.path play the installed distributions; `megatron` is a namespace that megatron-core and
megatron-bridge share, so one of them alone must not count as the other."""

from __future__ import annotations

import importlib
import sys

import pytest

from agentic_verl.extras import megatron_missing, verl_default_megatron_bridge

# distribution -> the packages it installs (an empty __init__ each; `megatron` itself has none: a namespace)
STAND_INS = {
    "megatron-core": ["megatron/core"],
    "megatron-bridge": ["megatron/bridge"],
    "mbridge": ["mbridge"],
    "transformer-engine": ["transformer_engine", "transformer_engine/pytorch"],
}
TOP_LEVEL = ("megatron", "mbridge", "transformer_engine")


@pytest.fixture
def install(tmp_path, monkeypatch):
    """install(*distributions): stand-ins on sys.path, each in its own site folder; imports undone afterwards."""
    def _install(*distributions: str) -> None:
        for name in distributions:
            site = tmp_path / name
            for package in STAND_INS[name]:
                (site / package).mkdir(parents=True, exist_ok=True)
                (site / package / "__init__.py").write_text("")
            monkeypatch.syspath_prepend(str(site))
        importlib.invalidate_caches()

    yield _install
    for module in [m for m in sys.modules if m.split(".")[0] in TOP_LEVEL]:
        del sys.modules[module]


def test_verl_selects_megatron_bridge_by_default():
    # verl 0.9.1's engine/megatron.yaml: vanilla_mbridge False -> verl/models/mcore/bridge.py (megatron.bridge)
    assert verl_default_megatron_bridge() == "megatron-bridge"


@pytest.mark.parametrize("bridge, installed, missing", [
    # nothing installed: everything named
    (None, [], ["megatron.core", "megatron.bridge", "transformer_engine.pytorch"]),
    # verl's default bridge is Megatron-Bridge: core + mbridge + TE is not enough
    (None, ["megatron-core", "mbridge", "transformer-engine"], ["megatron.bridge"]),
    # megatron-bridge alone fills the `megatron` namespace but is not megatron-core
    (None, ["megatron-bridge", "transformer-engine"], ["megatron.core"]),
    (None, ["megatron-core", "megatron-bridge", "transformer-engine"], []),
    # the recipes' bridge, mbridge (recipes/_common/engine/, install/megatron.txt): no megatron.bridge needed
    ("mbridge", ["megatron-core", "mbridge", "transformer-engine"], []),
    ("mbridge", ["megatron-core", "megatron-bridge", "transformer-engine"], ["mbridge"]),
    ("megatron-bridge", ["megatron-core", "mbridge"], ["megatron.bridge", "transformer_engine.pytorch"]),
])
def test_megatron_missing_names_what_verl_imports(install, bridge, installed, missing):
    install(*installed)
    why = megatron_missing(bridge)
    if not missing:
        assert why is None
        return
    assert why is not None
    named = why.split(" needs ", 1)[1].split(":", 1)[0].split(", ")
    assert named == missing, why


def test_unknown_bridge_is_an_error():
    with pytest.raises(ValueError, match="mbridge"):
        megatron_missing("bridge9")
