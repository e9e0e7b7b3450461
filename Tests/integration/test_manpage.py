"""Docs/slimplay.1 against the binary: every option `--help` lists (and `ctl --help`) has an
entry in the page with the same spellings and value name, nothing more; the page names the
binary's version and renders without warnings."""

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.player import binary_path

PAGE = Path(__file__).resolve().parents[2] / "Docs" / "slimplay.1"

# `  -s <host[:port]>   Server address…`, `  -h, --help   …`, `  --discover-to <host[:port]>`
HELP_OPTION = re.compile(r"^  (?P<names>--?[\w-]+(?:, --?[\w-]+)*)(?: <(?P<value>[^>]+)>)?(?: |$)")
SPELLING = re.compile(r"--?[\w-]+")
NAMES = re.compile(r"--?[\w-]+(?:, --?[\w-]+)*")
# A macro argument: "quoted" (with "" for a quote) or up to the next space.
ROFF_ARGUMENT = re.compile(r'"((?:[^"]|"")*)"?|(\S+)')


def run(*args: str) -> str:
    result = subprocess.run([binary_path(), *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout


def help_options(text: str) -> dict[str, str]:
    """The OPTIONS block of a --help text: `-s host[:port]` → its description."""
    options: dict[str, str] = {}
    current = None
    in_block = False
    for line in text.splitlines():
        if line.strip() == "OPTIONS:":
            in_block = True
            continue
        if not in_block:
            continue
        if line and not line.startswith(" "):
            break  # the next block (SUBCOMMANDS:)
        match = HELP_OPTION.match(line)
        if match:
            value = match["value"]
            current = match["names"] + (" " + value.replace("\u2026", "...") if value else "")
            options[current] = line[match.end() :].strip()
        elif current and line.strip():
            options[current] = (options[current] + " " + line.strip()).strip()
    return options


def deroff(text: str) -> str:
    """Plain text of roff source: escapes resolved, macro names dropped."""
    words = []
    for line in text.splitlines():
        if line.startswith(".\\\""):
            continue
        if line.startswith("."):
            macro, _, rest = line[1:].partition(" ")
            arguments = [m[1] if m[1] is not None else m[2] for m in ROFF_ARGUMENT.finditer(rest)]
            joiner = "" if len(macro) == 2 and set(macro) <= set("BIR") else " "
            line = joiner.join(arguments)
        words.append(line)
    plain = " ".join(words)
    plain = re.sub(r"\\f[BIRP]", "", plain)
    for escape, replacement in (
        ("\\-", "-"), ("\\&", ""), ("\\~", " "), ("\\e", "\\"), ("\\c", ""),
        ("\\(lq", '"'), ("\\(rq", '"'), ("\\(en", "-"), ("\\(em", "--"), ("\\(mu", "x"),
    ):
        plain = plain.replace(escape, replacement)
    return re.sub(r"\s+", " ", plain).strip()


def sections(source: str) -> dict[str, list[str]]:
    result: dict[str, list[str]] = {}
    name = None
    for line in source.splitlines():
        if line.startswith(".SH "):
            name = line[4:].strip().strip('"')
            result[name] = []
        elif name:
            result[name].append(line)
    return result


def tagged_entries(lines: list[str]) -> dict[str, str]:
    """`.TP` entries of a section: plain tag → plain body."""
    entries: dict[str, str] = {}
    index = 0
    while index < len(lines):
        if lines[index] == ".TP" and index + 1 < len(lines):
            tag = deroff(lines[index + 1])
            body = []
            index += 2
            while index < len(lines) and lines[index].split(" ")[0] not in (".TP", ".SS", ".SH", ".PP"):
                body.append(lines[index])
                index += 1
            entries[tag] = deroff("\n".join(body))
        else:
            index += 1
    return entries


@pytest.fixture(scope="module")
def source() -> str:
    return PAGE.read_text()


@pytest.fixture(scope="module")
def helps() -> dict[str, dict[str, str]]:
    return {"OPTIONS": help_options(run("--help")), "CONTROL COMMAND": help_options(run("ctl", "--help"))}


def test_help_is_parsed(helps):
    main, ctl = helps["OPTIONS"], helps["CONTROL COMMAND"]
    assert "-s host[:port]" in main and "--cache-dir dir" in main and "-h, --help" in main, main
    assert "--discover-to host[:port]" in main and "--control-token token" in main, main
    assert "--api addr:port" in ctl and "--json" in ctl, ctl


def test_every_option_spelling_of_the_help_is_in_the_page(source, helps):
    missing = []
    for options in helps.values():
        for entry in options:
            for spelling in SPELLING.findall(NAMES.match(entry)[0]):
                if spelling.replace("-", "\\-") not in source:
                    missing.append(spelling)
    assert not missing, f"not in {PAGE.name} (as \\- escaped): {missing}"


@pytest.mark.parametrize("section", ["OPTIONS", "CONTROL COMMAND"])
def test_the_page_documents_exactly_the_options_of_the_help(source, helps, section):
    help_entries = helps[section]
    page_entries = {tag: body for tag, body in tagged_entries(sections(source)[section]).items() if tag.startswith("-")}
    assert set(page_entries) == set(help_entries), (
        f"missing in {section}: {sorted(set(help_entries) - set(page_entries))}; "
        f"not in --help: {sorted(set(page_entries) - set(help_entries))}"
    )
    for tag, description in help_entries.items():
        body = page_entries[tag]
        # The default the help appends; the page words it its own way but must name it.
        default = re.search(r" ?\(default: ([^)]*)\)$", description)
        if default:
            assert default[1] in body, f"{tag}: default {default[1]!r} not in {body!r}"
            description = description[: default.start()]
        assert len(body) >= len(description), f"{tag}: the page says less than --help ({body!r} vs {description!r})"


def test_the_page_is_plain_ascii_and_names_the_version(source):
    assert source.isascii(), "write non-ASCII characters as roff escapes"
    title = next(line for line in source.splitlines() if line.startswith(".TH "))
    fields = shlex.split(title[4:])
    version = run("--version").strip()
    assert fields[:2] == ["SLIMPLAY", "1"], title
    assert fields[3] == f"slimplay {version}", f"{title!r} does not carry version {version}"
    for name in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "CONFIGURATION", "SERVICE", "FILES",
                 "ENVIRONMENT", "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
        assert name in sections(source), f"no .SH {name}"


def test_the_page_renders_without_warnings():
    env = {**os.environ, "LC_ALL": "C.UTF-8", "MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat"}
    commands = []
    if shutil.which("groff"):
        commands.append(["groff", "-man", "-Tutf8", "-ww", "-z", str(PAGE)])
    if shutil.which("man"):
        commands.append(["man", "--warnings=all", "-l", str(PAGE)])
    if not commands:
        pytest.skip("neither groff nor man is installed")
    for command in commands:
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
        assert result.returncode == 0 and not result.stderr, f"{command[0]}: {result.stderr}"
        if command[0] == "man":
            assert "SLIMPLAY(1)" in result.stdout and "--create-service" in result.stdout, result.stdout[:500]
