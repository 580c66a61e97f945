import time

from smartcontext.retrieval.entities import EntityExtractor


def texts(entities):
    return [e.text for e in entities]


def test_seed_examples():
    ex = EntityExtractor(known_names={"login", "AuthService"})
    assert set(texts(ex.extract("How does AuthService handle login?"))) == {"AuthService", "login"}
    assert texts(EntityExtractor().extract("What's in 'config.py'?")) == ["config.py"]
    assert texts(EntityExtractor().extract("user_validation logic")) == ["user_validation"]


def test_shapes_and_kinds():
    ents = {e.text: e for e in EntityExtractor().extract(
        "Why does auth.service.login retry MAX_RETRIES times in src/auth/service.py? HTTPAdapter too"
    )}
    assert ents["auth.service.login"].kind == "qualified"
    assert ents["MAX_RETRIES"].kind == "constant"
    assert ents["src/auth/service.py"].kind == "path"
    assert ents["HTTPAdapter"].kind == "camel"


def test_known_names_raise_confidence():
    plain = {e.text: e for e in EntityExtractor().extract("parse_config is slow")}
    known = {e.text: e for e in EntityExtractor(known_names={"parse_config"}).extract("parse_config is slow")}
    assert known["parse_config"].confidence > plain["parse_config"].confidence
    assert known["parse_config"].known and not plain["parse_config"].known


def test_deduplicates_case_insensitively():
    ents = EntityExtractor().extract("HTTPAdapter, httpadapter and `HTTPAdapter` again")
    assert [e.text.lower() for e in ents].count("httpadapter") == 1


def test_non_ascii_identifiers():
    found = texts(EntityExtractor().extract("Was macht größeKlasse und Ünïcode_name?"))
    assert "größeKlasse" in found and "Ünïcode_name" in found


def test_quoted_prose_is_not_an_entity_but_names_inside_are():
    found = texts(EntityExtractor().extract('The docs say "call load_config before anything"'))
    assert "load_config" in found
    assert "call load_config before anything" not in found


def test_hostile_long_inputs_finish_quickly():
    ex = EntityExtractor(known_names={"a"})
    start = time.perf_counter()
    for text in ["a" * 100_000, "a." * 50_000, "a/" * 50_000, "aB" * 50_000, "a_" * 50_000,
                 "'" + "a" * 100_000, "`" * 100_000, "x" * 99_999 + "!"]:
        ex.extract(text)
    # Catastrophic backtracking would take minutes; linear matching takes well under this.
    assert time.perf_counter() - start < 20


def test_a_plain_word_naming_an_item_is_weaker_than_an_identifier():
    from smartcontext.retrieval import entities

    ex = EntityExtractor(known_names={"session", "open_session"})
    found = {e.text: e for e in ex.extract("what happens to the session when open_session fails?")}
    # "session" is an English word that some item is also called: evidence, not a name.
    assert found["session"].kind == "known"
    assert found["session"].confidence == entities.PLAIN_NAME_IN_SHORT_TEXT
    assert found["session"].confidence < found["open_session"].confidence


def test_a_plain_word_is_a_members_name_when_the_question_names_its_class(tmp_path):
    from smartcontext import Workspace
    from smartcontext.retrieval.catalogue import Catalogue
    from smartcontext.retrieval.scoring import entity_scores

    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "auth.py").write_text(
        "class AuthService:\n    def login(self, user):\n        return user\n\n\n"
        "class Login:\n    def login(self):\n        return self\n\n\n"
        "def login(user):\n    return user\n", encoding="utf-8")
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        cat = Catalogue(ws.store)
        by_name = {cat.entries[r].qualname: r for r in cat.entries}

        def scores(question):
            ents = EntityExtractor(is_known=cat.is_known).extract(question)
            got = entity_scores(cat, ents)
            return {q: got.get(r, 0.0) for q, r in by_name.items()}

        named = scores("How does AuthService handle login?")
        # The class the question names vouches for its member; the free function is only
        # named by the plain word.
        assert named["AuthService.login"] > named["login"] > 0
        # Without the class named, its member is named like the free function. (A class
        # named like the word itself counts as named too: leaving it out cost a dev2
        # instance its place in the top ten, rank 10 -> 11.)
        alone = scores("how does login work?")
        assert alone["login"] == alone["AuthService.login"] < alone["Login.login"]
