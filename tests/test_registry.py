import sys

import pytest

from agentic_verl.registry import Registry, RegistryError


def test_register_and_get_by_name():
    registry = Registry("widget")

    @registry.register("square")
    def square(x):
        return x * x

    assert registry.get("square")(4) == 16
    assert "square" in registry
    assert registry.names() == ["square"]


def test_duplicate_name_is_an_error_but_re_registering_the_same_object_is_not():
    registry = Registry("widget")
    registry.register("a")(len)
    registry.register("a")(len)  # idempotent: module re-import must not fail
    with pytest.raises(RegistryError, match="already registered"):
        registry.register("a")(abs)


def test_unknown_name_lists_known_names():
    registry = Registry("widget")
    registry.register("alpha")(len)
    registry.register("beta")(abs)
    with pytest.raises(RegistryError) as info:
        registry.get("gamma")
    assert "unknown widget 'gamma'" in str(info.value)
    assert "alpha, beta" in str(info.value)


def test_module_reference():
    assert Registry("widget").get("os.path:join")("a", "b") == "a/b"


def test_file_reference(tmp_path):
    user_file = tmp_path / "my_reward.py"
    user_file.write_text("def score(x):\n    return x + 1\n")
    assert Registry("widget").get(f"{user_file}:score")(1) == 2


@pytest.mark.parametrize(
    "reference, message",
    [
        ("no_such_module_xyz:attr", "cannot import"),  # module missing
        ("os.path:no_such_attr", "has no attribute"),  # attribute missing
        ("/nonexistent/file.py:f", "does not exist"),  # file missing
        (":attr", "bad reference"),  # empty target
    ],
)
def test_bad_references_say_what_is_wrong(reference, message):
    with pytest.raises(RegistryError, match=message):
        Registry("widget").get(reference)


def _install_metadata(site, dist: str, entry_points: str, group: str = "av_test.widgets") -> None:
    """An installed distribution as importlib.metadata sees it: a dist-info folder on sys.path."""
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry_points}\n")


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("av_test_widgets", None)


def test_entry_point_names_are_found_lazily_and_listed(site):
    (site / "av_test_widgets.py").write_text("def triple(x):\n    return 3 * x\n")
    _install_metadata(site, "widgets-dist", "triple = av_test_widgets:triple")
    registry = Registry("widget", entry_point_group="av_test.widgets")
    registry.register("double")(lambda x: 2 * x)
    assert registry.names() == ["double", "triple"] and "triple" in registry
    assert "av_test_widgets" not in sys.modules  # listing imports nothing
    assert registry.get("triple")(2) == 6
    with pytest.raises(RegistryError) as info:
        registry.get("quadruple")
    assert "entry points (av_test.widgets): triple (widgets-dist 1.0)" in str(info.value)


def test_a_module_that_registers_what_its_entry_point_names_is_not_a_duplicate(site):
    registry = Registry("widget", entry_point_group="av_test.widgets")
    sys.modules["av_test_registry_under_test"] = type(sys)("av_test_registry_under_test")
    sys.modules["av_test_registry_under_test"].REGISTRY = registry
    (site / "av_test_widgets.py").write_text(
        "from av_test_registry_under_test import REGISTRY\n\n\n@REGISTRY.register('triple')\ndef triple(x):\n"
        "    return 3 * x\n")
    _install_metadata(site, "widgets-dist", "triple = av_test_widgets:triple")
    try:
        assert registry.get("triple")(1) == 3 and registry.get("triple") is registry._entries["triple"]
    finally:
        sys.modules.pop("av_test_registry_under_test")


def test_an_entry_point_that_shadows_a_registered_name_or_fails_to_import_is_an_error(site):
    (site / "av_test_widgets.py").write_text("def other(x):\n    return x\n")
    _install_metadata(site, "widgets-dist", "double = av_test_widgets:other\nbroken = av_test_widgets:missing")
    registry = Registry("widget", entry_point_group="av_test.widgets")
    registry.register("double")(len)
    with pytest.raises(RegistryError, match=r"widget 'double' is registered twice: by builtins.len and by the entry "
                                            r"point 'double = av_test_widgets:other' of distribution widgets-dist 1.0"):
        registry.get("double")
    with pytest.raises(RegistryError, match="cannot import the entry point 'broken = av_test_widgets:missing' of "
                                            "distribution widgets-dist 1.0: AttributeError"):
        registry.get("broken")


def test_two_distributions_declaring_one_name_is_an_error(site):
    _install_metadata(site, "widgets-one", "same = os:getcwd")
    _install_metadata(site, "widgets-two", "same = os:getpid")
    with pytest.raises(RegistryError, match="widget 'same' is declared by 2 entry points"):
        Registry("widget", entry_point_group="av_test.widgets").get("same")
