"""Plain English in questions: words too common to name code, and word forms.

Questions are written in English ("where is the assertion rewriting done?") while code
names use other forms of the same words (``AssertionRewriter``, ``rewrite_asserts``).
Two helpers, used at query time only so the index format never changes:

- ``COMMON_WORDS``: English words that are almost never what a question means by a code
  name even when some symbol is called that (``done()``, ``make``, ``check``).
- ``stem``: a light suffix stripper, so that "rewriting", "rewrite", "rewriter" and
  "rewritten" share one stem; the keyword search expands a question's word to the
  indexed words with the same stem.
- What code calls a question's words: ``ABBREVIATIONS`` ("temporary" -> tmp),
  ``EVERYDAY`` ("settings" -> config) and ``PHRASAL_VERBS`` ("switch off" -> disable),
  asked by the code-context pipeline for short questions (keyword.code_spellings), and
  ``american``: the American form of a British spelling ("colour" -> color).
"""

from __future__ import annotations

import re

# Verbs, adjectives and adverbs of everyday English; nouns that are also common code
# names (session, request, config, cache...) are deliberately not here.
COMMON_WORDS = frozenset(
    """able actually add added again all allow allowed already also always another any
    anything around available back bad based become becomes begin best better big both
    bring call called calling calls can case cases cause caused causes certain change
    changed changes check checked clear come comes correct correctly could current
    currently default did different do does doing done down during each easy either
    else end ends enough even ever every everything exactly example exist exists expect
    expected fail failed fails fine first following found get gets getting give given
    gives go goes going gone good got great handle handled happen happened happens hard
    help here how however important instead just keep kept kind know known last later
    least less let like likely little long look looking looks lot made main make makes
    making many may maybe mean means might more most much must need needed needs never
    new next nice no none not nothing now often old once one only other others otherwise
    own part perhaps place point possible pretty probably put quite rather real really
    reason right run runs same say says see seems seen set sets should show shown shows
    simple simply since small so some something sometimes still such sure take taken
    takes tell than that then there thing things think this though through thus too
    true try trying turn two under unless up us use used uses using usually very want
    wanted wants way ways well were what whatever when where whether which while who
    whole why will within without work worked working works would wrong yes yet""".split()
)

# Longest first, so "ations" is tried before "ation" and "s".
_SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "ers", "er", "ies", "es", "ed", "ly", "s")
MIN_STEM = 3


# A noun made of a verb with "-ery"/"-ory" meets the verb: "discovery" -> discover,
# "recovery" -> recover (pytest's "Python test discovery" for "discover test files").
# Words of at least this many letters only: "query", "memory" and "factory" keep theirs.
NOUN_Y_MIN = 8


def stem(word: str) -> str:
    """A light stem: "rewriting", "rewrites", "rewriter", "rewritten" -> "rewrit";
    "assertion", "asserts" -> "assert". Not a full Porter stemmer: enough for the word
    forms of one verb or noun to meet, cheap, and never shorter than ``MIN_STEM``."""
    w = word.lower()
    if NOUN_Y_MIN and len(w) >= NOUN_Y_MIN and w.endswith(("ery", "ory")):
        w = w[:-1]
    if w.endswith("en") and len(w) - 2 >= MIN_STEM + 1 and w[-3] == w[-4]:
        w = w[:-2]  # "written" forms with a doubled consonant: rewritten -> rewritt
    else:
        for suffix in _SUFFIXES:
            if w.endswith(suffix) and len(w) - len(suffix) >= MIN_STEM:
                if suffix == "s" and w.endswith(("ss", "us", "is")):
                    break  # class, status, analysis are not plurals
                w = w[: -len(suffix)] + ("y" if suffix == "ies" else "")
                if suffix == "ies" and NOUN_Y_MIN and len(w) >= NOUN_Y_MIN and w.endswith(("ery", "ory")):
                    w = w[:-1]  # directories -> directory -> director, as directory
                break
    if len(w) > MIN_STEM and w[-1] == w[-2] and w[-1] not in "lsz":
        w = w[:-1]  # running -> runn -> run; rewritt -> rewrit
    if len(w) > MIN_STEM + 1 and w.endswith("e"):
        w = w[:-1]  # rewrite -> rewrit, to meet rewriting
    return w


# Everyday words for what code names otherwise: a user's "settings" are the code's
# config (``find_default_config_files``, ``check_confval_types``). Asked like
# ABBREVIATIONS (keyword.code_spellings), while SETTINGS_ARE_CONFIG is on.
SETTINGS_ARE_CONFIG = True
EVERYDAY: dict[str, tuple[str, ...]] = {
    "setting": ("config", "conf", "cfg"), "settings": ("config", "conf", "cfg"),
}

# How programmers shorten everyday words in names: a question says "temporary directory",
# the code says ``tmpdir``. Used at query time (retrieval/keyword.py), for the forms the
# index holds; general programming usage, not any one project's names.
ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "application": ("app",), "applications": ("apps", "app"),
    "argument": ("arg",), "arguments": ("args", "arg"),
    "attribute": ("attr",), "attributes": ("attrs", "attr"),
    "authentication": ("auth",), "authorization": ("auth",),
    "boolean": ("bool",), "buffer": ("buf",),
    "calculate": ("calc",), "certificate": ("cert",), "certificates": ("certs", "cert"),
    "character": ("char",), "characters": ("chars", "char"),
    "command": ("cmd",), "commands": ("cmds", "cmd"),
    "configuration": ("config", "cfg", "conf"), "configure": ("config",), "configurations": ("configs", "config"),
    "connection": ("conn",), "connections": ("conns", "conn"),
    "context": ("ctx",), "current": ("cur", "curr"),
    "database": ("db",), "decrement": ("dec",), "default": ("dflt",),
    "definition": ("def",), "definitions": ("defs",),
    "destination": ("dest", "dst"), "dictionary": ("dict",),
    "directory": ("dir",), "directories": ("dirs", "dir"),
    "document": ("doc",), "documents": ("docs",), "documentation": ("docs", "doc"),
    "environment": ("env",), "environments": ("envs", "env"),
    "error": ("err",), "errors": ("errs",), "evaluate": ("eval",),
    "exception": ("exc",), "exceptions": ("excs", "exc"), "execute": ("exec",),
    "expression": ("expr",), "expressions": ("exprs", "expr"),
    "extension": ("ext",), "extensions": ("exts", "ext"),
    "function": ("func", "fn"), "functions": ("funcs", "func"),
    "generate": ("gen",), "generator": ("gen",),
    "identifier": ("id",), "identifiers": ("ids",),
    "image": ("img",), "implementation": ("impl",),
    "increment": ("inc",), "index": ("idx",), "information": ("info",),
    "initialize": ("init",), "initialise": ("init",), "initialization": ("init",),
    "integer": ("int",), "iterator": ("iter",), "iterate": ("iter",),
    "keyword": ("kw",), "keywords": ("kw",),
    "length": ("len",), "library": ("lib",), "libraries": ("libs", "lib"),
    "maximum": ("max",), "message": ("msg",), "messages": ("msgs", "msg"),
    "minimum": ("min",), "module": ("mod",), "modules": ("mods", "mod"),
    "number": ("num",), "numbers": ("nums", "num"),
    "object": ("obj",), "objects": ("objs", "obj"),
    "option": ("opt",), "options": ("opts", "opt"),
    "package": ("pkg",), "packages": ("pkgs", "pkg"),
    "parameter": ("param",), "parameters": ("params", "param"),
    "position": ("pos",), "previous": ("prev",),
    "reference": ("ref",), "references": ("refs", "ref"),
    "repository": ("repo",), "repositories": ("repos", "repo"),
    "request": ("req",), "requests": ("reqs", "req"),
    "response": ("resp",), "responses": ("resps", "resp"),
    "sequence": ("seq",), "source": ("src",), "sources": ("srcs", "src"),
    "specification": ("spec",), "standard": ("std",),
    "statistics": ("stats",), "string": ("str",), "strings": ("strs", "str"),
    "synchronize": ("sync",), "system": ("sys",),
    "temporary": ("tmp", "temp"), "utility": ("util",), "utilities": ("utils", "util"),
    "value": ("val",), "values": ("vals", "val"),
    "variable": ("var",), "variables": ("vars", "var"), "version": ("ver",),
}


# Phrasal verbs of everyday English and the verbs code names use for them: "a comment that
# switches off a warning" -> disable, "where does it look for one" -> find, "cut short" ->
# truncate. A verb is matched in any of its forms (_verb_forms), the particle as written.
# "set up" -> setup is left out: it pulled pytest's setup code into a question about
# fixture scopes (measured twice, docs/benchmarks.md).
PHRASAL_VERBS_ON = True
PHRASAL_VERBS: dict[tuple[str, str], tuple[str, ...]] = {
    ("switch", "off"): ("disable",), ("turn", "off"): ("disable",),
    ("switch", "on"): ("enable",), ("turn", "on"): ("enable",),
    ("line", "up"): ("align",), ("look", "up"): ("lookup",),
    ("look", "for"): ("find", "search"), ("find", "out"): ("detect",),
    ("leave", "out"): ("exclude", "ignore", "skip"), ("put", "back"): ("restore",),
    ("throw", "away"): ("discard",), ("give", "up"): ("abort",),
    ("break", "up"): ("split",), ("split", "up"): ("split",),
    ("clean", "up"): ("cleanup",), ("pick", "up"): ("load",),
    ("shut", "down"): ("shutdown",), ("start", "up"): ("startup",),
    ("try", "again"): ("retry",), ("cut", "off"): ("truncate",), ("cut", "short"): ("truncate",),
    ("keep", "track"): ("track",), ("write", "out"): ("dump", "write"),
    ("put", "together"): ("build", "join"), ("join", "together"): ("concat", "join"),
}
# Irregular forms of the verbs above; regular ones come from _verb_forms.
IRREGULAR = {"leave": ("left",), "give": ("gave", "given"), "break": ("broke", "broken"),
             "throw": ("threw", "thrown"), "find": ("found",), "keep": ("kept",),
             "write": ("wrote", "written")}


def _verb_forms(verb: str) -> set[str]:
    """``line`` -> line, lines, lined, lining; ``cut`` -> cut, cuts, cutting; and IRREGULAR's."""
    if verb.endswith("e"):
        return {verb, verb + "s", verb + "d", verb[:-1] + "ing", *IRREGULAR.get(verb, ())}
    return {verb, verb + "s", verb + "es", verb + "ed", verb + "ing",
            verb + verb[-1] + "ed", verb + verb[-1] + "ing", *IRREGULAR.get(verb, ())}


_PHRASAL_INDEX = {(form, particle): out for (verb, particle), out in PHRASAL_VERBS.items()
                  for form in _verb_forms(verb)}
_LETTERS = re.compile(r"[a-z]+")


def phrasal_spellings(text: str) -> list[str]:
    """The code's verbs for the phrasal verbs of ``text`` (PHRASAL_VERBS), in order."""
    if not PHRASAL_VERBS_ON:
        return []
    words = _LETTERS.findall(text[:5000].lower())
    found: dict[str, None] = {}
    for pair in zip(words, words[1:]):
        for w in _PHRASAL_INDEX.get(pair, ()):
            found[w] = None
    return list(found)


# British spellings a question may use where code (and most of its comments) spells the
# American way: "colour" -> color, "behaviour" -> behavior, "serialise" -> serialize,
# "analyse" -> analyze, "centre" -> center, "catalogue" -> catalog, "labelled" -> labeled.
# Asked like ABBREVIATIONS, as well as the word as written (a British-spelled project,
# like sqlfluff's "capitalisation", keeps its match), and only when the index holds the
# other form, so a word the rules misread ("promise" -> promize) asks for nothing.
AMERICAN_SPELLINGS = True
_OUR = ("colour", "behaviour", "favour", "flavour", "neighbour", "honour", "labour", "humour",
        "rumour", "vapour", "armour", "harbour", "odour", "savour", "endeavour", "vigour", "rigour")
_WHOLE = {"licence": "license", "licences": "licenses", "defence": "defense", "offence": "offense",
          "grey": "gray", "programme": "program", "programmes": "programs"}
_ISE = re.compile(r"^([a-z]{3,})is(e|es|ed|ing|er|ers|ation|ations)$")
_YSE = re.compile(r"^([a-z]+)ys(e|es|ed|ing)$")
_TRE = re.compile(r"^([a-z]+)(?:tre|tres|tred)$")
_OGUE = re.compile(r"^([a-z]{3,})ogue(s?)$")
_LL = re.compile(r"^([a-z]{2,}[aeiou])ll(ed|ing|er|ers)$")


def american(word: str) -> str | None:
    """The American spelling of a British-spelled ``word`` (lower case), or None."""
    if not AMERICAN_SPELLINGS:
        return None
    if word in _WHOLE:
        return _WHOLE[word]
    for british in _OUR:
        if british in word:
            return word.replace(british, british[:-2] + "r")
    for pattern, repl in ((_ISE, r"\1iz\2"), (_YSE, r"\1yz\2"), (_OGUE, r"\1og\2"), (_LL, r"\1l\2")):
        if pattern.match(word):
            return pattern.sub(repl, word)
    m = _TRE.match(word)
    if m:
        return m.group(1) + {"tre": "ter", "tres": "ters", "tred": "tered"}[word[len(m.group(1)):]]
    return None
