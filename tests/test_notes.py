"""The notes core directly: frontmatter, the tag rule, links, the Obsidian resolver, the
one-pass scan and folder matching. Then the promise it exists for: one tag means the
same notes in every front end (CLI `search --tag`, the vault tools, `semantic_search`)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from smartcontext.notes import (
    LinkResolver,
    extract_links,
    extract_tags,
    frontmatter_aliases,
    frontmatter_tags,
    load_frontmatter_yaml,
    normalise_folder,
    normalise_tag,
    parse_frontmatter,
    path_matches,
    read_frontmatter,
    read_note,
    scan_note,
    split_frontmatter,
    tag_matches,
    tags_in_line,
    to_jsonable,
)

# -- frontmatter ----------------------------------------------------------------------


def test_split_frontmatter_keeps_the_body_byte_for_byte():
    raw, body, lines = split_frontmatter("---\ntitle: A\n---\r\nbody\r\n")
    assert (raw, body, lines) == ("title: A\n", "body\r\n", 3)
    assert split_frontmatter("\ufeff---\na: 1\n...\nrest")[0] == "a: 1\n"  # BOM, "..." closes
    assert split_frontmatter("---\na: 1\nno end") == (None, "---\na: 1\nno end", 0)
    assert split_frontmatter("text\n---\na: 1\n---\n")[0] is None  # only at the very top
    assert split_frontmatter("---\n---\nbody") == ("", "body", 2)


def test_frontmatter_yaml_is_safe_and_reports_problems():
    assert load_frontmatter_yaml("a: [1, 2]\nwhen: 2024-01-05\n") == ({"a": [1, 2], "when": dt.date(2024, 1, 5)}, None)
    data, error = load_frontmatter_yaml("a: [unclosed\n")
    assert data is None and "not valid YAML" in error and "line" in error
    assert load_frontmatter_yaml("- a\n- b\n")[1] == "frontmatter is a list, not a mapping of properties"
    assert load_frontmatter_yaml("x: !!python/object:os.system ls\n")[0] is None  # no arbitrary objects
    assert "larger than" in load_frontmatter_yaml("a: " + "x" * 70_000)[1]
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdef", "bcdefg")
    )
    fm, lines, error = read_frontmatter("---\n" + bomb + "---\nbody\n")
    assert fm == {} and lines == 0 and "expands to more than" in error


def test_read_frontmatter_and_parse_frontmatter():
    text = "---\ntags: [a]\nwhen: 2024-01-05\n---\n# Body\n"
    assert read_frontmatter(text) == ({"tags": ["a"], "when": "2024-01-05"}, 4, None)
    assert parse_frontmatter(text) == ({"tags": ["a"], "when": "2024-01-05"}, "# Body\n", None)
    broken = "---\ntags: [a\n---\n# Body\n"
    fm, body, error = parse_frontmatter(broken)
    assert fm == {} and body == broken and error  # the block is read as text
    assert to_jsonable({dt.date(2024, 1, 1): {1, 2}, True: float("inf"), None: b"\x00"}) == {
        "2024-01-01": [1, 2], "true": "inf", "null": "AA=="}


def test_frontmatter_tags_and_aliases():
    assert frontmatter_tags({"tags": "a, #b c", "Tag": ["D", 7, ["e"]], "other": "x"}) == ["a", "b", "c", "D", "7", "e"]
    assert frontmatter_tags({"tags": ["A", "a", "#a"]}) == ["A"]  # case-insensitive dedupe
    assert frontmatter_tags({"tags": None}) == [] and frontmatter_tags({"tags": {"a": 1}}) == []
    assert frontmatter_aliases({"aliases": ["One", "two, three"], "alias": "One"}) == ["One", "two", "three"]


# -- the tag rule ---------------------------------------------------------------------

TAG_CASES = [
    # The cases the two old scanners disagreed on.
    ("see (#project)", ["project"]),
    ("a,#idea", ["idea"]),
    ("**#bold**", ["bold"]),
    ("#-draft", ["-draft"]),
    # Where a tag may start.
    ("#start of line", ["start"]),
    ("after\t#tab", ["tab"]),
    ('"#quoted"', ["quoted"]),
    ("[#bracket] and {#brace}", ["bracket", "brace"]),
    ("foo#bar", []),
    ("C# and F#", []),
    ("##double", []),
    ("\\#escaped", []),
    ("&#123; &#x41;", []),
    ("x.com/#frag and http://a.b/c#d and https://e.f/#g", []),
    ("time:#12", []),
    # What a tag is made of.
    ("#1984", []),
    ("#y1984", ["y1984"]),
    ("#2024/01", []),
    ("#2024-01", ["2024-01"]),
    ("#a/b/c.", ["a/b/c"]),
    ("#nested/", ["nested"]),
    ("#snake_case and #kebab-case", ["snake_case", "kebab-case"]),
    ("#日本語 #café #Ελληνικά", ["日本語", "café", "Ελληνικά"]),
    ("#-- and #_ and #/", []),
    ("#tag, #next; #last!", ["tag", "next", "last"]),
    # Never inside code, links or headings.
    ("`#code` and ``a `#b` c`` then #real", ["real"]),
    ("[[Note#Heading]] and [text](x.md#part) and ![[img.png#x]]", []),
    ("[see #inside](x.md) #outside", ["outside"]),
    ("# Heading", []),
    ("## Heading #tag", ["tag"]),
]


@pytest.mark.parametrize("line,expected", TAG_CASES)
def test_tag_rule(line, expected):
    assert tags_in_line(line) == expected


def test_tags_skip_fences_and_frontmatter_and_dedupe():
    text = "\n".join([
        "---", "tags: [Fm, shared]", "note: '#notatag'", "---",
        "Body #Shared and #inline",
        "```python", "#fenced", "```",
        "~~~~", "#tilde", "```", "#still-fenced", "~~~~",
        "> ```", "> #quoted-fence", "> ```",
        "    #indented-is-text",
        "#after",
    ])
    assert extract_tags(text) == ["Fm", "shared", "inline", "indented-is-text", "after"]


def test_tag_matching_is_nested_and_normalised():
    assert normalise_tag(" #AI/LLM ") == "ai/llm"
    have = {"ai/llm", "infra/gpu"}
    assert tag_matches(have, ["ai"]) and tag_matches(have, ["infra/gpu"]) and tag_matches(have, ["ai/llm"])
    assert not tag_matches(have, ["a"]) and not tag_matches(have, ["ai/l"]) and not tag_matches(have, [])


# -- links and the resolver -------------------------------------------------------------


def test_links_of_every_style():
    text = "\n".join([
        "---", "related: '[[Prop Note]]'", "---",
        "See [[Folder/Note#Part|shown]] and ![[image.png]].",
        "| [[Table\\|alias]] |",
        "[md](../Other%20Note.md#Sec) and [web](https://x.y/z) and [<angle>](<a b.md>)",
        "`[[not a link]]`",
        "```", "[[fenced]]", "```",
        "[[#Local heading]]",
    ])
    got = [(l.target, l.heading, l.alias, l.embed, l.style, l.line) for l in extract_links(text)]
    assert got == [
        ("Prop Note", "", "", False, "wikilink", 1),
        ("Folder/Note", "Part", "shown", False, "wikilink", 4),
        ("image.png", "", "", True, "wikilink", 4),
        ("Table", "", "alias", False, "wikilink", 5),
        ("../Other Note", "Sec", "md", False, "markdown", 6),
        ("a b", "", "<angle>", False, "markdown", 6),
        ("", "Local heading", "", False, "wikilink", 11),
    ]


def test_resolver_follows_obsidian():
    r = LinkResolver([
        "Index.md", "Projects/Plan.md", "Projects/Budget.md", "Archive/Budget.md", "Areas/Sub/Budget.md",
        "Attachments/image.png", "Daily/v1.2 notes.md", "Projects/sub/Deep.md",
    ])
    assert r.resolve("Projects/Plan") == "Projects/Plan.md"  # from the root
    assert r.resolve("plan", "Index.md") == "Projects/Plan.md"  # by name, any case
    assert r.resolve("Budget", "Projects/Plan.md") == "Projects/Budget.md"  # same folder first
    assert r.resolve("Budget", "Index.md") == "Archive/Budget.md"  # then the shortest path
    assert r.resolve("Sub/Budget", "Index.md") == "Areas/Sub/Budget.md"  # a path suffix
    assert r.resolve("./sub/Deep", "Projects/Plan.md") == "Projects/sub/Deep.md"
    assert r.resolve("../Index", "Projects/Plan.md") == "Index.md"
    assert r.resolve("../../outside", "Projects/Plan.md") is None
    assert r.resolve("image.png") == "Attachments/image.png"
    assert r.resolve("v1.2 notes") == "Daily/v1.2 notes.md"
    assert r.resolve("Plan#Heading|alias") == "Projects/Plan.md"
    assert r.resolve("Nowhere") is None and r.resolve("") is None


# -- one pass over a note ---------------------------------------------------------------


def test_scan_headings_title_and_facts():
    text = "---\ntitle: From FM\ntags: x\n---\n# H1\n```\n# not a heading\n```\n## H2 ##\ntext #y [[L]]\n"
    scan = scan_note(text)
    assert scan.body_start == 4
    assert [(i, level, t) for i, level, t in scan.headings] == [(4, 1, "H1"), (8, 2, "H2")]
    assert scan.title("a/b.md") == "From FM"
    assert scan_note("# First\n# Second").title("a/b.md") == "First"
    assert scan_note("no heading").title("a/Note name.md") == "Note name"
    facts = read_note("a/b.md", text)
    assert facts.tags == ["x", "y"] and [l.target for l in facts.links] == ["L"] and facts.body_start == 5


def test_folder_matching():
    assert normalise_folder("./Notes/AI/") == "Notes/AI"
    assert normalise_folder("\\Notes\\AI") == "Notes/AI"
    assert normalise_folder(".") == normalise_folder("/") == ""
    assert path_matches("Projects/a.md", ["Projects"]) and not path_matches("Projects2/a.md", ["Projects"])
    assert path_matches("x.md", [""]) and path_matches("Projects/a.md", ["Projects/a.md"])


# -- one tag, the same notes everywhere ---------------------------------------------------

TAGGED = {
    # path: text; every note says "harbour" so a keyword search sees them all.
    "Paren.md": "# Paren\n\nThe harbour plan, see (#project).\n",
    "Comma.md": "# Comma\n\nharbour a,#idea\n",
    "Bold.md": "# Bold\n\nharbour **#bold** text\n",
    "Draft.md": "# Draft\n\nharbour #-draft\n",
    "Nested.md": "---\ntags: [project/harbour]\n---\n# Nested\n\nharbour details\n",
    "Upper.md": "# Upper\n\nharbour #Project\n",
    "Code.md": "# Code\n\nharbour\n\n```\n#project #idea\n```\n\n`#bold`\n",
    "Url.md": "# Url\n\nharbour http://x.y/#project and foo#idea\n",
    "Folder/Deep.md": "# Deep\n\nharbour with #idea/sub\n",
}
TAG_ANSWERS = {
    "project": {"Paren.md", "Nested.md", "Upper.md"},
    "idea": {"Comma.md", "Folder/Deep.md"},
    "bold": {"Bold.md"},
    "-draft": {"Draft.md"},
    "project/harbour": {"Nested.md"},
    "idea/sub": {"Folder/Deep.md"},
    "nothing": set(),
}


def test_one_tag_names_the_same_notes_in_every_front_end(tmp_path):
    from test_smart_connections import VaultBuilder, unit

    from smartcontext import Workspace
    from smartcontext.smart_connections import SmartConnections
    from smartcontext.vault import VaultTools

    vault = tmp_path / "vault"
    b = VaultBuilder(vault)
    rng = np.random.default_rng(3)
    for path, text in TAGGED.items():
        b.standard_note(path, text, unit(rng.normal(size=16)))
    ws = Workspace.open(vault)
    ws.index(embeddings=False)
    tools = VaultTools(vault, workspace=ws)
    sc = SmartConnections(vault, use_hf_cache=False, cache_path=None, sweep_interval=0)
    env = {**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"}
    try:
        for tag, expected in TAG_ANSWERS.items():
            for spelling in (tag, "#" + tag.upper()):
                library = {h.path for h in ws.search("harbour", mode="keyword", tags=[spelling], limit=100)}
                answer = tools.search_vault("harbour", mode="keyword", tags=[spelling], limit=50)
                assert answer["success"] is True, answer
                vault_tool = {r["source"] for r in answer["results"]}
                semantic = {h.path for h in sc.semantic_search("harbour", tags=[spelling], min_score=-1, limit=100).results}
                assert library == vault_tool == semantic == expected, (spelling, library, vault_tool, semantic)
            proc = subprocess.run(
                [sys.executable, "-m", "smartcontext", "search", "harbour", str(vault), "--mode", "keyword",
                 "--tag", tag, "--limit", "100", "--json"],
                capture_output=True, text=True, env=env, timeout=120,
            )
            assert proc.returncode == (0 if expected else 1), (tag, proc.stderr)  # 1: nothing found, as rg
            assert {r["path"] for r in json.loads(proc.stdout)["results"]} == expected, tag
    finally:
        sc.close()
        ws.close()


def test_a_resolver_updated_with_added_and_removed_paths_equals_one_built_anew():
    """A note created or deleted by an agent patches the catalogue's resolver; it must
    resolve exactly as one built from the new list (case twins, same names in several
    folders, a path removed that held a name's first spelling)."""
    import random

    rng = random.Random(11)
    pool = [f"{d}{n}.md" for d in ("", "a/", "a/b/", "B/", "b/") for n in ("Note", "note", "Other", "x y")]
    pool += ["img.png", "a/img.png", "/lead.md", "back\\slash.md"]
    paths = set(rng.sample(pool, 10))
    resolver = LinkResolver(paths)
    for _ in range(200):
        added = set(rng.sample(pool, rng.randint(0, 3)))
        removed = set(rng.sample(sorted(paths), min(len(paths), rng.randint(0, 3))))
        paths = (paths - removed) | added
        resolver = resolver.updated(added, removed)
        fresh = LinkResolver(paths)
        assert (resolver.paths, resolver._exact, resolver._lower, resolver._by_name) == (
            fresh.paths, fresh._exact, fresh._lower, fresh._by_name)
        for target in ("note", "Note", "a/note", "b/Note.md", "x y", "img.png", "lead", "./Other"):
            for source in ("", "a/n.md", "B/n.md"):
                assert resolver.resolve(target, source) == fresh.resolve(target, source)
