"""Translated documentation and compound documentation folders rank below what they copy.

fastapi keeps each documentation page in thirteen languages (docs/en/docs/..., docs/pt/docs/...)
and the programs its pages show under docs_src/: a question about its code once got one page
in seven languages. Small trees built here show the same.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import write_tree

from smartcontext import Workspace
from smartcontext.retrieval import scoring
from smartcontext.retrieval.translations import language_of, translated_copies


def test_a_page_beside_its_english_copy_is_a_translation():
    paths = [
        "docs/en/docs/deps.md", "docs/pt/docs/deps.md", "docs/pt-br/docs/deps.md", "docs/zh_Hant/docs/deps.md",
        "docs/fr/docs/only-in-french.md",  # no English copy at that place: kept
        "docs/en/docs/only-in-english.md",
        "src/io/reader.py", "src/os/reader.py",  # two-letter folders, no English copy: code
        "locale/en_US/messages.po", "locale/de_DE/messages.po",
    ]
    assert translated_copies(paths) == {
        "docs/pt/docs/deps.md", "docs/pt-br/docs/deps.md", "docs/zh_Hant/docs/deps.md", "locale/de_DE/messages.po",
    }


def test_language_folder_names():
    assert language_of("pt_BR") == "pt" and language_of("zh-hant") == "zh" and language_of("en") == "en"
    assert language_of("io") is None and language_of("src") is None and language_of("docs") is None


_DEPS = '''
    def close_dependencies(stack):
        """Close every dependency opened with yield once the response is sent."""
        for dep in reversed(stack):
            dep.close()
    '''

_PAGE = """\
    # {title}

    {text}

    ```python
    async def get_db():
        db = open_database()
        try:
            yield db
        finally:
            db.close()
    ```
    """

_LANGUAGES = {
    "en": ("Dependencies with yield", "A dependency with yield is closed after the response is sent."),
    "de": ("Abhängigkeiten mit yield", "Eine Abhängigkeit mit yield wird nach dem Senden geschlossen."),
    "es": ("Dependencias con yield", "Una dependencia con yield se cierra después de enviar la respuesta."),
    "fr": ("Dépendances avec yield", "Une dépendance avec yield est fermée après l'envoi de la réponse."),
    "pt": ("Dependências com yield", "Uma dependência com yield é fechada depois que a resposta é enviada."),
    "ja": ("yield を使う依存関係", "yield を使う依存関係はレスポンスの送信後に閉じられます。"),
}


def _tree(root: Path) -> None:
    files = {"app/__init__.py": "", "app/dependencies.py": _DEPS}
    for lang, (title, text) in _LANGUAGES.items():
        # As in fastapi, a translation keeps the English words of the code and of the parts
        # not translated yet.
        text = f"{text} {_LANGUAGES['en'][1]}"
        files[f"docs/{lang}/docs/dependencies-with-yield.md"] = _PAGE.format(title=title, text=text)
    files["docs_src/dependencies/tutorial008.py"] = '''
        from app.dependencies import close_dependencies

        async def get_db():
            """Tutorial: a dependency with yield, closed after the response is sent."""
            db = open_database()
            try:
                yield db
            finally:
                close_dependencies([db])
        '''
    write_tree(root, files)


def _best_scores(root: Path, question: str) -> dict[str, float]:
    """Each shown file's best item score; everything fits, so every match is shown."""
    with Workspace.open(root) as ws:
        ws.index(embeddings=False)
        res = ws.context(question, max_tokens=4000)
    best: dict[str, float] = {}
    for si in res.items:
        best[si.item.path] = max(best.get(si.item.path, 0.0), si.score)
    return best


QUESTION = "How is a dependency with yield closed after the response is sent?"
CODE, ENGLISH = "app/dependencies.py", "docs/en/docs/dependencies-with-yield.md"


def _copies(best: dict[str, float]) -> dict[str, float]:
    return {p: s for p, s in best.items() if p.startswith("docs/") and p != ENGLISH}


def test_translations_rank_below_the_english_page_and_the_code(tmp_path, monkeypatch):
    _tree(tmp_path)
    best = _best_scores(tmp_path, QUESTION)
    assert len(_copies(best)) == 5, best
    assert max(_copies(best).values()) < min(best[ENGLISH], best[CODE])
    # Without the rule the translations outrank the code: the check above can fail.
    monkeypatch.setattr(scoring, "TRANSLATION_PRIOR", 1.0)
    best = _best_scores(tmp_path, QUESTION)
    assert max(_copies(best).values()) > best[CODE]


def test_a_question_in_another_language_still_finds_its_copy(tmp_path):
    _tree(tmp_path)
    best = _best_scores(tmp_path, "Wann wird eine Abhängigkeit mit yield geschlossen?")
    assert max(best, key=lambda p: best[p]) == "docs/de/docs/dependencies-with-yield.md"


def test_a_compound_docs_folder_is_an_auxiliary_folder(tmp_path, monkeypatch):
    _tree(tmp_path)
    example = "docs_src/dependencies/tutorial008.py"
    best = _best_scores(tmp_path, QUESTION)
    assert best[example] < best[CODE]
    monkeypatch.setattr(scoring, "AUX_COMPOUND", False)
    best = _best_scores(tmp_path, QUESTION)
    assert best[example] > best[CODE]


def test_verbose_says_how_many_translations_were_weighed_down(tmp_path):
    _tree(tmp_path)
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        assert ws.context(QUESTION, max_tokens=4000).stats["translations_demoted"] == 5
    proc = subprocess.run(
        [sys.executable, "-m", "smartcontext", "context", QUESTION, str(tmp_path), "--verbose"],
        capture_output=True, text=True, timeout=180, env={**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "translations demoted" in proc.stderr and "5 pages below their English copy" in proc.stderr


def test_a_search_by_a_pages_file_name_lists_the_english_copy_first(tmp_path):
    """Every copy of fastapi's "dependencies-with-yield" page matches its file name whole, so
    all score 1.0; the Turkish one, shorter and as full of the words, came first."""
    english = "# Dependencies with yield\n\n" + "FastAPI runs extra steps after the response is sent. " * 20
    turkish = "# `yield` ile Dependencies\n\nDependencies with yield: yield ile dependencies.\n"
    write_tree(tmp_path, {"docs/en/docs/dependencies-with-yield.md": english,
                          "docs/tr/docs/dependencies-with-yield.md": turkish})
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        hits = ws.search("dependencies with yield", limit=10, mode="keyword")
    assert [h.path for h in hits][:2] == [ENGLISH, "docs/tr/docs/dependencies-with-yield.md"], \
        [(h.path, h.score) for h in hits]
    assert hits[0].score == hits[1].score == 1.0
