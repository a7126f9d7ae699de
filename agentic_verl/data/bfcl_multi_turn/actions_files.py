"""Requests on bfcl-eval's GorillaFileSystem, sampled from the live instance: every sampler reads the current
folder (`_current_dir`, its files and folders) and returns an action whose calls are valid there, or None when the
state offers nothing to ask for. Standard library only (the instance comes from bfcl-eval)."""

from __future__ import annotations

import re

from agentic_verl.data.bfcl_multi_turn import vocab
from agentic_verl.data.bfcl_multi_turn.core import Action, Call, Context, Missing, choose, quoted

CLASS = "GorillaFileSystem"


def _here(ctx: Context):
    folder = ctx.instances[CLASS]._current_dir
    files = [name for name, item in folder.contents.items() if hasattr(item, "content")]
    folders = [name for name, item in folder.contents.items() if not hasattr(item, "content")]
    return folder, files, folders


def _visible(names: list[str]) -> list[str]:
    return [name for name in names if not name.startswith(".")]


def _any_file(ctx: Context) -> str | None:
    """A visible file of the current folder at random; None (drawing nothing) when there is none."""
    return choose(ctx, _visible(_here(ctx)[1]))


def _file_and_folder(ctx: Context) -> tuple[str, str] | None:
    """(a visible file, a folder here without a file of that name) at random; None when there is no such pair."""
    folder, files, folders = _here(ctx)
    return choose(ctx, [(f, d) for f in _visible(files) for d in folders if f not in folder.contents[d].contents])


def cd_into(ctx: Context) -> Action | None:
    _, _, folders = _here(ctx)
    if not folders:
        return None
    name = ctx.rng.choice(folders)
    say = ctx.rng.choice(["go into the {} folder", "open the {} directory", "move into {}"]).format(quoted(name))
    return Action(say, [Call("cd", {"folder": name})])


def cd_up(ctx: Context) -> Action | None:
    folder, _, _ = _here(ctx)
    if folder.parent is None:
        return None
    return Action(ctx.rng.choice(["go back up to the parent folder", "step out to the parent directory"]),
                  [Call("cd", {"folder": ".."})])


def ls(ctx: Context) -> Action | None:
    _, files, folders = _here(ctx)
    if any(name.startswith(".") for name in files + folders) and ctx.rng.random() < 0.5:
        return Action("list everything in the current folder, hidden files included", [Call("ls", {"a": True})])
    return Action(ctx.rng.choice(["list what is in the current folder", "show me the contents of this directory"]),
                  [Call("ls", {})])


def pwd(ctx: Context) -> Action | None:
    return Action(ctx.rng.choice(["tell me the full path of the directory I am in", "print the working directory"]),
                  [Call("pwd", {})])


def mkdir(ctx: Context) -> Action | None:
    name = vocab.folder_name(ctx.rng, _here(ctx)[0].contents)
    return Action(f"create a new folder called {quoted(name)}", [Call("mkdir", {"dir_name": name})],
                  Missing("create a new folder here", "What should the new folder be called?",
                          f"Call the folder {quoted(name)}."))


def touch(ctx: Context) -> Action | None:
    name = vocab.file_name(ctx.rng, _here(ctx)[0].contents)
    return Action(f"create an empty file named {quoted(name)}", [Call("touch", {"file_name": name})],
                  Missing("create a new empty file in this folder", "What name should the new file have?",
                          f"Name it {quoted(name)}."))


def touch_and_write(ctx: Context) -> Action | None:
    folder, _, _ = _here(ctx)
    name, text = vocab.file_name(ctx.rng, folder.contents), vocab.sentence(ctx.rng)
    return Action(f"create a file {quoted(name)} that contains the line {quoted(text)}",
                  [Call("touch", {"file_name": name}), Call("echo", {"content": text, "file_name": name})])


def echo(ctx: Context) -> Action | None:
    if (name := _any_file(ctx)) is None:
        return None
    text = vocab.sentence(ctx.rng)
    return Action(f"overwrite {quoted(name)} with the text {quoted(text)}",
                  [Call("echo", {"content": text, "file_name": name})],
                  Missing(f"overwrite one of the files here with the text {quoted(text)}",
                          "Which file should I write that text to?", f"Use {quoted(name)}."))


def cat(ctx: Context) -> Action | None:
    if (name := _any_file(ctx)) is None:
        return None
    return Action(ctx.rng.choice(["show me what {} says", "display the contents of {}"]).format(quoted(name)),
                  [Call("cat", {"file_name": name})],
                  Missing("display the contents of a file in this folder", "Which file would you like to see?",
                          f"The file is {quoted(name)}."))


def grep(ctx: Context) -> Action | None:
    folder, files, _ = _here(ctx)
    candidates = []
    for name in _visible(files):
        first_lines = folder.contents[name].content.splitlines()[:6]
        words = sorted({w for line in first_lines for w in re.findall(r"[A-Za-z]{5,}", line)})
        candidates += [(name, word) for word in words]
    if not candidates:
        return None
    name, word = ctx.rng.choice(candidates)
    return Action(f"find the lines of {quoted(name)} that mention {quoted(word)}",
                  [Call("grep", {"file_name": name, "pattern": word})],
                  Missing(f"search {quoted(name)} for a keyword", "Which keyword should I search for?",
                          f"The keyword is {quoted(word)}."))


def wc(ctx: Context) -> Action | None:
    if (name := _any_file(ctx)) is None:
        return None
    mode, words = ctx.rng.choice([("l", "lines"), ("w", "words"), ("c", "characters")])
    return Action(f"count the {words} in {quoted(name)}", [Call("wc", {"file_name": name, "mode": mode})],
                  Missing(f"count the {words} in one of my files", "Which file should I count in?",
                          f"I mean {quoted(name)}."))


def sort(ctx: Context) -> Action | None:
    name = _any_file(ctx)
    return None if name is None else Action(f"sort the lines of {quoted(name)} alphabetically",
                                            [Call("sort", {"file_name": name})])


def tail(ctx: Context) -> Action | None:
    if (name := _any_file(ctx)) is None:
        return None
    lines = ctx.rng.randint(1, 5)
    return Action(f"show the last {lines} line{'s' if lines > 1 else ''} of {quoted(name)}",
                  [Call("tail", {"file_name": name, "lines": lines})])


def diff(ctx: Context) -> Action | None:
    _, files, _ = _here(ctx)
    files = _visible(files)
    if len(files) < 2:
        return None
    first, second = ctx.rng.sample(files, 2)
    return Action(f"compare {quoted(first)} with {quoted(second)} line by line",
                  [Call("diff", {"file_name1": first, "file_name2": second})])


def rename(ctx: Context) -> Action | None:
    if (name := _any_file(ctx)) is None:
        return None
    new = vocab.file_name(ctx.rng, _here(ctx)[0].contents)
    return Action(f"rename {quoted(name)} to {quoted(new)}", [Call("mv", {"source": name, "destination": new})],
                  Missing(f"rename {quoted(name)}", "What should the new name be?", f"Rename it to {quoted(new)}."))


def move_into(ctx: Context) -> Action | None:
    if (pair := _file_and_folder(ctx)) is None:
        return None
    name, target = pair
    return Action(f"move {quoted(name)} into the {quoted(target)} folder",
                  [Call("mv", {"source": name, "destination": target})],
                  Missing(f"move {quoted(name)} into one of the folders here", "Which folder should it go into?",
                          f"Put it in {quoted(target)}."))


def copy_into(ctx: Context) -> Action | None:
    pair = _file_and_folder(ctx)
    return None if pair is None else Action(f"put a copy of {quoted(pair[0])} in the {quoted(pair[1])} folder",
                                            [Call("cp", {"source": pair[0], "destination": pair[1]})])


def remove(ctx: Context) -> Action | None:
    name = _any_file(ctx)
    return None if name is None else Action(f"delete the file {quoted(name)}", [Call("rm", {"file_name": name})])


def remove_empty_folder(ctx: Context) -> Action | None:
    folder, _, folders = _here(ctx)
    empty = [d for d in folders if not folder.contents[d].contents]
    if not empty:
        return None
    name = ctx.rng.choice(empty)
    return Action(f"remove the empty folder {quoted(name)}", [Call("rmdir", {"dir_name": name})])


def find(ctx: Context) -> Action | None:
    folder, _, _ = _here(ctx)
    names = []

    def walk(directory):
        for name, item in directory.contents.items():
            names.append(name)
            if not hasattr(item, "content"):
                walk(item)

    walk(folder)
    stems = sorted({part for name in names for part in re.findall(r"[a-z]{4,}", name)})
    if not stems:
        return None
    stem = ctx.rng.choice(stems)
    return Action(f"find every file or folder under the current directory whose name contains {quoted(stem)}",
                  [Call("find", {"path": ".", "name": stem})],
                  Missing("find the files under the current directory whose names contain a certain word",
                          "Which word should the names contain?", f"The word is {quoted(stem)}."))


def disk_usage(ctx: Context) -> Action | None:
    return Action("tell me how much disk space the current folder uses, in human-readable units",
                  [Call("du", {"human_readable": True})])


SAMPLERS = [(3, cd_into), (1, cd_up), (1, ls), (0.3, pwd), (1, mkdir), (1, touch), (1, touch_and_write), (1, echo),
            (1, cat), (1, grep), (1, wc), (0.6, sort), (0.6, tail), (0.6, diff), (1, rename), (1, move_into),
            (0.6, copy_into), (0.5, remove), (0.5, remove_empty_folder), (0.7, find), (0.3, disk_usage)]  # fmt: skip
