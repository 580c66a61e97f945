import json
import tarfile
import textwrap
from pathlib import Path

import pytest

from smartcontext.sources import markdown as md
from smartcontext.notes import (
    LinkResolver,
    extract_links,
    extract_tags,
    parse_frontmatter,
    resolve_link,
    split_frontmatter,
)
from smartcontext.sources.markdown import SECTION_MAX_TOKENS, parse_markdown
from smartcontext.tokens import count_tokens


def note(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def by_id(parsed):
    return {item.id: item for item in parsed.items}


NOTE = note(
    """
    ---
    title: Launch plan
    tags: [project, "#q3"]
    aliases: Launch, Go-live
    ---
    Why we launch. #status/active

    # Goals
    Ship it.

    ## Risks
    Late vendors.

    ### Mitigation
    Pay more.

    ## Budget
    Money.

    # Timeline
    Soon.
    """
)


def test_sections_ids_heading_paths_lines_and_parents():
    parsed = parse_markdown("plans/launch.md", NOTE)
    ids = [i.id for i in parsed.items]
    assert ids == [
        "plans/launch.md",
        "plans/launch.md#Goals",
        "plans/launch.md#Goals/Risks",
        "plans/launch.md#Goals/Risks/Mitigation",
        "plans/launch.md#Goals/Budget",
        "plans/launch.md#Timeline",
    ]
    items = by_id(parsed)
    intro = items["plans/launch.md"]
    assert intro.kind == "section" and intro.language == "markdown"
    assert intro.name == "Launch plan"  # the intro is named after the note's title
    assert intro.meta["level"] == 0 and intro.meta["heading_path"] == []
    assert intro.text == "Why we launch. #status/active"
    assert (intro.start_line, intro.end_line) == (6, 6)  # frontmatter is lines 1-5

    mitigation = items["plans/launch.md#Goals/Risks/Mitigation"]
    assert mitigation.meta["heading_path"] == ["Goals", "Risks", "Mitigation"]
    assert mitigation.meta["level"] == 3
    assert mitigation.name == "Mitigation" and mitigation.qualname == "Goals/Risks/Mitigation"
    assert mitigation.text == "### Mitigation\nPay more."
    assert NOTE.split("\n")[mitigation.start_line - 1] == "### Mitigation"
    assert mitigation.parent_id == "plans/launch.md#Goals/Risks"
    assert items["plans/launch.md#Goals/Budget"].parent_id == "plans/launch.md#Goals"
    assert items["plans/launch.md#Goals"].parent_id == "plans/launch.md"
    assert items["plans/launch.md#Timeline"].end_line == len(NOTE.rstrip("\n").split("\n"))
    contains = {(e.src, e.dst) for e in parsed.edges if e.kind == "contains"}
    assert ("plans/launch.md#Goals/Risks", "plans/launch.md#Goals/Risks/Mitigation") in contains
    assert parsed.warnings == []


def test_note_metadata_on_every_section():
    parsed = parse_markdown("plans/launch.md", NOTE)
    for item in parsed.items:
        assert item.meta["title"] == "Launch plan"
        assert item.meta["tags"] == ["project", "q3", "status/active"]
        assert item.meta["aliases"] == ["Launch", "Go-live"]
        assert item.meta["frontmatter"]["title"] == "Launch plan"
    assert by_id(parsed)["plans/launch.md"].meta["section_tags"] == ["status/active"]
    assert by_id(parsed)["plans/launch.md#Goals"].meta["section_tags"] == []
    json.dumps([i.to_dict() for i in parsed.items])  # everything is JSON-serialisable


def test_title_falls_back_to_first_h1_then_file_stem():
    assert parse_markdown("a/x.md", "intro\n\n# First\n## Two\n# Second\n").items[0].name == "First"
    only_h2 = parse_markdown("a/🚀 Launch day.md", "## Sub\ntext\n")
    assert only_h2.items[0].meta["title"] == "🚀 Launch day"
    assert only_h2.items[0].id == "a/🚀 Launch day.md#Sub"


def test_no_intro_section_when_nothing_precedes_the_first_heading():
    parsed = parse_markdown("n.md", "\n\n# Only\nbody\n")
    assert [i.id for i in parsed.items] == ["n.md#Only"]
    assert parsed.items[0].parent_id is None


def test_empty_and_frontmatter_only_notes_still_give_one_item():
    empty = parse_markdown("empty.md", "")
    assert len(empty.items) == 1 and empty.items[0].text == "" and empty.items[0].name == "empty"
    fm_only = parse_markdown("fm.md", "---\nstatus: draft\n---\n")
    assert len(fm_only.items) == 1
    assert fm_only.items[0].meta["frontmatter"] == {"status": "draft"}


def test_repeated_headings_get_line_suffixes():
    text = "# Log\n## Day\na\n## Day\nb\n## Day\nc\n"
    ids = [i.id for i in parse_markdown("j.md", text).items]
    assert ids == ["j.md#Log", "j.md#Log/Day", "j.md#Log/Day@4", "j.md#Log/Day@6"]
    assert len(set(ids)) == len(ids)


def test_heading_closing_hashes_and_non_headings():
    text = "## Title ##\nx\n#hashtag line\n####### seven\n    # indented code\nC# is fine\n"
    parsed = parse_markdown("h.md", text)
    assert [i.name for i in parsed.items] == ["Title"]
    assert parsed.items[0].meta["section_tags"] == ["hashtag"]


def test_fence_with_hash_lines_is_not_split_into_headings():
    text = note(
        """
        # Setup
        Run this:
        ```bash
        # install
        pip install x  # [[NotALink]] #notatag
        ## also not a heading
        ```
        ~~~~
        # still code
        ~~~
        # still code (a shorter fence does not close)
        ~~~~
        After.
        # Next
        """
    )
    parsed = parse_markdown("s.md", text)
    assert [i.id for i in parsed.items] == ["s.md#Setup", "s.md#Next"]
    setup = parsed.items[0]
    assert "## also not a heading" in setup.text and "After." in setup.text
    assert not [e for e in parsed.edges if e.kind == "links_to"]
    assert setup.meta["tags"] == []


def test_unclosed_fence_runs_to_the_end():
    parsed = parse_markdown("u.md", "# A\n```\n# B\n")
    assert [i.id for i in parsed.items] == ["u.md#A"]


def test_frontmatter_dates_become_iso_strings():
    text = "---\ncreated: 2024-01-05\nwhen: 2024-01-05T10:30:00\nnested: {d: 2023-12-31}\nset: !!set {a, b}\n---\nx\n"
    fm, body, error = parse_frontmatter(text)
    assert error is None and body == "x\n"
    assert fm == {"created": "2024-01-05", "when": "2024-01-05T10:30:00", "nested": {"d": "2023-12-31"},
                  "set": ["a", "b"]}
    parsed = parse_markdown("d.md", text)
    json.dumps(parsed.items[0].meta)


def test_malformed_frontmatter_is_a_warning_and_indexed_as_text():
    text = "---\ntitle: [unclosed\ntags: x\n---\n# Body\ntext\n"
    fm, body, error = parse_frontmatter(text)
    assert fm == {} and body == text and "not valid YAML" in error
    parsed = parse_markdown("bad.md", text)
    assert len(parsed.warnings) == 1 and "bad.md" in parsed.warnings[0] and "YAML" in parsed.warnings[0]
    intro = parsed.items[0]
    assert intro.start_line == 1 and "title: [unclosed" in intro.text
    assert [i.id for i in parsed.items][-1] == "bad.md#Body"


def test_frontmatter_that_is_not_a_mapping_and_unclosed_blocks():
    fm, body, error = parse_frontmatter("---\n- a\n- b\n---\nx")
    assert fm == {} and "not a mapping" in error
    assert parse_frontmatter("---\na: 1\nno closing\n") == ({}, "---\na: 1\nno closing\n", None)
    assert parse_frontmatter("no frontmatter\n---\na: 1\n---\n") == ({}, "no frontmatter\n---\na: 1\n---\n", None)
    assert parse_frontmatter("---\n---\nbody") == ({}, "body", None)


def test_frontmatter_alias_bomb_is_refused():
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"{chr(97 + i)}: &{chr(97 + i)} [*{chr(96 + i)}, *{chr(96 + i)}, *{chr(96 + i)}, *{chr(96 + i)}]")
    text = "---\n" + "\n".join(lines) + "\n---\nbody\n"
    fm, _, error = parse_frontmatter(text)
    assert fm == {} and "expands" in error


def test_split_frontmatter_keeps_body_bytes_and_crlf():
    text = "---\r\na: 1\r\n---\r\nline one\r\nline two"
    raw, body, count = split_frontmatter(text)
    assert raw == "a: 1\r\n" and body == "line one\r\nline two" and count == 3
    assert parse_frontmatter(text)[0] == {"a": 1}


@pytest.mark.parametrize(
    ("fm", "expected"),
    [
        ("tags: [a, '#b', c/d]", ["a", "b", "c/d"]),
        ("tags: a, b c", ["a", "b", "c"]),
        ("tag: '#solo'", ["solo"]),
        ("Tags:\n  - x\n  - X", ["x"]),
    ],
)
def test_frontmatter_tag_forms(fm, expected):
    assert extract_tags(f"---\n{fm}\n---\nbody\n") == expected


def test_inline_tags_skip_code_urls_links_and_numbers():
    text = note(
        """
        Start #alpha and #nested/tag/deep, also #Alpha again.
        `#incode` and ``#also `code` #x`` stay out.
        See https://example.com/page#anchor and [x](note.md#heading) and [[Note#Heading]].
        Issue #123 is a number; #y1984 is a tag; mid#word is not.
        #linestart
        """
    )
    assert extract_tags(text) == ["alpha", "nested/tag/deep", "y1984", "linestart"]


def test_wikilink_forms():
    text = note(
        """
        [[Plain]] [[Folder/Sub Note|shown]] [[Note#Heading]] [[Note#^block]]
        ![[image.png]] ![[Embedded#Part|alias]] [[#Local heading]] [[Page.md]]
        | table | [[Tabled\\|alias]] |
        `[[in code]]`
        """
    )
    links = extract_links(text)
    got = [(lk.target, lk.heading, lk.alias, lk.embed, lk.style, lk.line) for lk in links]
    assert got == [
        ("Plain", "", "", False, "wikilink", 1),
        ("Folder/Sub Note", "", "shown", False, "wikilink", 1),
        ("Note", "Heading", "", False, "wikilink", 1),
        ("Note", "^block", "", False, "wikilink", 1),
        ("image.png", "", "", True, "wikilink", 2),
        ("Embedded", "Part", "alias", True, "wikilink", 2),
        ("", "Local heading", "", False, "wikilink", 2),
        ("Page", "", "", False, "wikilink", 2),
        ("Tabled", "", "alias", False, "wikilink", 3),
    ]


def test_markdown_links_skip_urls_and_decode():
    text = note(
        """
        [rel](../other/Note.md) [sp](<My Note.md>) [enc](My%20Other.md#Sec%20One "title")
        [web](https://example.com/x.md) [mail](mailto:a@b.c) [anchor](#local) ![pic](img/p.png)
        [paren](file_(1).md)
        """
    )
    got = [(lk.target, lk.heading, lk.alias, lk.embed, lk.style) for lk in extract_links(text)]
    assert got == [
        ("../other/Note", "", "rel", False, "markdown"),
        ("My Note", "", "sp", False, "markdown"),
        ("My Other", "Sec One", "enc", False, "markdown"),
        ("", "local", "anchor", False, "markdown"),
        ("img/p.png", "", "pic", True, "markdown"),
        ("file_(1)", "", "paren", False, "markdown"),
    ]


def test_links_to_edges_come_from_the_section_holding_the_link():
    text = "---\nup: '[[Parent]]'\n---\nintro [[A]]\n# H\n[[B]] [[B|again]] [x](c.md)\n```\n[[Hidden]]\n```\n"
    parsed = parse_markdown("n.md", text)
    edges = sorted((e.src, e.dst_name) for e in parsed.edges if e.kind == "links_to")
    assert edges == [("n.md", "A"), ("n.md", "Parent"), ("n.md#H", "B"), ("n.md#H", "c")]
    h = by_id(parsed)["n.md#H"]
    assert [lk["alias"] for lk in h.meta["links"]] == ["", "again", "x"]
    assert h.meta["links"][0]["line"] == 6


def _long_section(paragraphs: int) -> str:
    para = "The quarterly vendor review covers delivery dates, prices and the support contract terms."
    blocks = []
    for i in range(paragraphs):
        blocks.append(f"Paragraph {i}. " + " ".join([para] * 3))
        if i == paragraphs // 2:
            blocks.append("```python\n# a comment that looks like a heading\n" + "\n".join(
                f"value_{k} = compute({k})" for k in range(12)) + "\n```")
    return "# Long\n\n" + "\n\n".join(blocks) + "\n\n# After\nend\n"


def test_long_section_splits_into_overlapping_parts_without_cutting_fences():
    text = _long_section(30)
    parsed = parse_markdown("long.md", text)
    parts = [i for i in parsed.items if i.meta["heading_path"] == ["Long"]]
    assert len(parts) >= 4
    assert parts[0].id == "long.md#Long"
    assert all(p.id == f"long.md#Long@{p.start_line}" for p in parts[1:])
    assert [p.meta["part"] for p in parts] == list(range(1, len(parts) + 1))
    assert all(p.meta["parts"] == len(parts) and p.meta.get("part_of", parts[0].id) == parts[0].id for p in parts)
    lines = text.split("\n")
    covered = set()
    for p in parts:
        assert p.text == "\n".join(lines[p.start_line - 1 : p.end_line])
        assert count_tokens(p.text) <= SECTION_MAX_TOKENS + 5
        assert p.text.count("```") % 2 == 0  # a fence is never cut
        covered.update(range(p.start_line, p.end_line + 1))
    long_end = lines.index("# After")
    assert {n for n in range(1, long_end + 1) if lines[n - 1].strip()} <= covered
    overlaps = [a.end_line - b.start_line + 1 for a, b in zip(parts, parts[1:], strict=False)]
    assert all(o >= 1 for o in overlaps)  # consecutive parts share a few lines
    assert by_id(parsed)["long.md#After"].parent_id is None


def test_a_link_in_overlapping_lines_belongs_to_one_part():
    para = "Words about the vendor contract and its renewal terms. " * 6
    body = "\n\n".join(f"{para} [[Target {i}]]" for i in range(25))
    parsed = parse_markdown("o.md", "# Long\n\n" + body + "\n")
    parts = parsed.items
    assert len(parts) > 2
    sources = {}
    for edge in parsed.edges:
        if edge.kind == "links_to":
            assert edge.dst_name not in sources, edge  # never from two parts
            sources[edge.dst_name] = edge.src
    assert sorted(sources) == sorted(f"Target {i}" for i in range(25))
    lines = ("# Long\n\n" + body).split("\n")
    for part in parts:
        for link in part.meta.get("links", []):
            assert part.start_line <= link["line"] <= part.end_line
            assert f"[[{link['target']}]]" in lines[link["line"] - 1]


def test_split_uses_the_estimate_when_the_tokenizer_is_missing(monkeypatch):
    monkeypatch.setattr(md, "_line_costs", lambda lines: [md._estimate_tokens(x) for x in lines])
    parts = [i for i in parse_markdown("long.md", _long_section(30)).items if i.meta["heading_path"] == ["Long"]]
    assert len(parts) >= 4
    assert all(sum(md._estimate_tokens(x) for x in p.text.split("\n")) <= SECTION_MAX_TOKENS for p in parts)


def test_short_sections_are_not_split():
    parsed = parse_markdown("s.md", "# A\n" + "word " * 100 + "\n")
    assert len(parsed.items) == 1 and "part" not in parsed.items[0].meta


def test_emoji_and_unicode_file_names_and_headings():
    parsed = parse_markdown("🗂 Inbox/📅 Daily — 2024.md", "# Été ☀️\ntext [[🚀 Launch]]\n")
    item = parsed.items[0]
    assert item.id == "🗂 Inbox/📅 Daily — 2024.md#Été ☀️"
    assert [e.dst_name for e in parsed.edges if e.kind == "links_to"] == ["🚀 Launch"]


PATHS = [
    "Note.md",
    "Projects/Note.md",
    "Projects/Plan.md",
    "Archive/2023/Plan.md",
    "Areas/Plan.md",
    "Deep/a/b/Unique.md",
    "assets/img.png",
    "Projects/sub/Spec.md",
    "Other/sub/Spec.md",
    "v1.2 notes.md",
]


@pytest.mark.parametrize(
    ("target", "from_path", "expected"),
    [
        ("Note", "Projects/Plan.md", "Note.md"),  # exact from the root wins
        ("Projects/Note", "x.md", "Projects/Note.md"),
        ("projects/note", "x.md", "Projects/Note.md"),  # case-insensitive
        ("Plan", "Projects/Other.md", "Projects/Plan.md"),  # relative to the note's folder
        ("Plan", "Archive/2023/x.md", "Archive/2023/Plan.md"),
        ("Plan", "Elsewhere/x.md", "Areas/Plan.md"),  # shortest of the stem matches
        ("Unique", "Note.md", "Deep/a/b/Unique.md"),
        ("unique.md", "Note.md", "Deep/a/b/Unique.md"),
        ("img.png", "Note.md", "assets/img.png"),
        ("../Note", "Projects/Plan.md", "Note.md"),
        ("./Plan", "Projects/x.md", "Projects/Plan.md"),
        ("./Plan", "x.md", None),  # explicitly relative: no name search
        ("sub/Spec", "Other/x.md", "Other/sub/Spec.md"),  # relative to the note's folder
        ("sub/Spec", "x.md", "Other/sub/Spec.md"),  # path suffix; same depth: alphabetical
        ("/Projects/Note", "Areas/x.md", "Projects/Note.md"),
        ("Note#Heading|alias", "x.md", "Note.md"),
        ("v1.2 notes", "x.md", "v1.2 notes.md"),
        ("Missing", "x.md", None),
        ("", "x.md", None),
        ("../../etc/passwd", "Projects/x.md", None),
    ],
)
def test_resolve_link(target, from_path, expected):
    assert resolve_link(target, from_path, PATHS) == expected


def test_resolver_prefers_same_folder_then_shortest_and_is_deterministic():
    resolver = LinkResolver(["b/z/Spec.md", "a/Spec.md", "c/Spec.md"])
    assert resolver.resolve("Spec", "c/x.md") == "c/Spec.md"
    assert resolver.resolve("Spec", "q/x.md") == "a/Spec.md"  # same depth, shorter/alphabetical
    assert resolver.resolve("z/Spec", "q/x.md") == "b/z/Spec.md"


ATTACHMENTS = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".pdf", ".mp4"}
HUB_VAULT = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "obsidian-hub-vault.tar.gz"


@pytest.mark.skipif(not HUB_VAULT.exists(), reason="dataset ../shared/datasets/obsidian-hub-vault.tar.gz not present")
def test_real_vault_sample_parses_consistently():
    """Every 20th note of the Obsidian community hub: parsing never fails, ids are unique,
    item text is exactly its line span, metadata is JSON, and most links resolve."""
    with tarfile.open(HUB_VAULT) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        all_paths = [m.name.removeprefix("./") for m in members]
        notes = [m for m in members if m.name.endswith(".md")][::20]
        texts = {m.name.removeprefix("./"): tar.extractfile(m).read().decode("utf-8", "replace") for m in notes}
    resolver = LinkResolver(all_paths)
    resolved = total = 0
    for path, text in texts.items():
        parsed = parse_markdown(path, text)
        ids = [i.id for i in parsed.items]
        assert ids and len(ids) == len(set(ids)), path
        lines = text.split("\n")
        for item in parsed.items:
            span = "\n".join(x.rstrip("\r") for x in lines[item.start_line - 1 : item.end_line])
            assert item.text == span.lstrip("\ufeff"), (path, item.id)
        json.dumps([i.to_dict() for i in parsed.items])
        for edge in parsed.edges:
            # The dataset ships the notes without their images: count links to notes only.
            if edge.kind == "links_to" and Path(edge.dst_name).suffix.lower() not in ATTACHMENTS:
                total += 1
                resolved += resolver.resolve(edge.dst_name, path) is not None
    assert len(texts) > 300 and total > 500
    assert resolved / total > 0.98


def _drawing(lines: int = 24) -> str:
    blob = "".join(chr(65 + (i * 7) % 26) + chr(97 + (i * 3) % 26) + str(i % 10) for i in range(lines * 90))
    return "\n".join(blob[i:i + 256] for i in range(0, len(blob), 256))


def test_a_section_of_encoded_drawing_data_is_left_out():
    """An Excalidraw note: its words are under Text Elements, its drawing is compressed
    base64 under Drawing, which search and a model cannot read."""
    text = "\n".join([
        "---", "excalidraw-plugin: parsed", "---",
        "# Text Elements", "Login service ^a1b2c3", "", "Token cache ^d4e5f6", "",
        "%%", "# Drawing", "```compressed-json", _drawing(), "```", "%%",
        "# After the drawing", "Still read.", ""])
    parsed = md.parse_markdown("Architecture.excalidraw.md", text)
    assert [it.qualname for it in parsed.items] == ["Text Elements", "After the drawing"]
    assert "Token cache" in parsed.items[0].text


def test_a_heading_alone_or_a_short_hash_is_still_a_section():
    parsed = md.parse_markdown("n.md", note(f"""
        # Release
        ## Commit
        3f9a1c2b4d5e6f708192a3b4c5d6e7f8091a2b3c
        ## Keys
        {"A" * 99}
        """))
    assert [it.qualname for it in parsed.items] == ["Release", "Release/Commit", "Release/Keys"]


@pytest.mark.parametrize("heading, name", [
    ("## Component files {#component-files}", "Component files"),
    ("## Setup {#setup .advanced}", "Setup"),
    ("## Notes {: #notes}", "Notes"),
    ('## Slides {data-background-iframe="https://example.org/x"}', "Slides"),
    ("## Logic {#each items as item}", "Logic {#each items as item}"),  # Svelte, not attributes
    ("## Sets {a, b}", "Sets {a, b}"),
    ("## {#props}", "{#props}"),  # nothing left without it: kept as written
])
def test_a_heading_is_named_without_its_attribute_list(heading, name):
    parsed = md.parse_markdown("guide.md", f"# Guide\n\n{heading}\n\nText.\n")
    section = parsed.items[-1]
    assert section.name == name and section.id == f"guide.md#Guide/{name}"
    assert section.text.startswith(heading)  # the text itself is as written
