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
