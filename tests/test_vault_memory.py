import datetime as dt
import json
import threading

import pytest

from smartcontext.vault import VaultTools

FIXED = dt.datetime(2024, 3, 15, 9, 30, 5, tzinfo=dt.timezone(dt.timedelta(hours=1)))


def call(result: dict) -> dict:
    """A tool's answer: a dict of plain JSON values with its success flag."""
    assert isinstance(result, dict) and isinstance(result["success"], bool)
    assert json.loads(json.dumps(result)) == result
    return result


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    root.mkdir()
    return root


@pytest.fixture
def tools(vault):
    return VaultTools(vault, clock=lambda: FIXED)


def test_preferences_round_trip_with_seed_messages(tools, vault):
    assert call(tools.list_preferences()) == {"success": True, "message": "No preferences saved.", "results": []}
    assert call(tools.remove_preference(1)) == {"success": False, "error": "No preferences to remove"}
    assert call(tools.save_preference("Answer in French")) == {"success": True, "message": "Saved preference: Answer in French"}
    call(tools.save_preference("Use  bullet\nlists"))  # one line: whitespace collapses
    assert call(tools.list_preferences()) == {"success": True, "results": ["1. Answer in French", "2. Use bullet lists"]}
    assert call(tools.remove_preference(3)) == {"success": False, "error": "Invalid line number. Must be between 1 and 2"}
    assert call(tools.remove_preference(1)) == {"success": True, "message": "Removed preference: Answer in French"}
    assert call(tools.list_preferences())["results"] == ["1. Use bullet lists"]
    stored = (vault / ".smartcontext" / "preferences.md").read_text()
    assert stored.startswith("# Preferences\n") and stored.endswith("- Use bullet lists\n")


def test_preferences_validation_and_duplicates(tools):
    assert call(tools.save_preference("   ")) == {"success": False, "error": "preference cannot be empty"}
    call(tools.save_preference("Be brief"))
    assert call(tools.save_preference("be BRIEF"))["message"] == "Preference already saved: be BRIEF"
    assert len(call(tools.list_preferences())["results"]) == 1
    assert "longer than" in call(tools.save_preference("x" * 3000))["error"]
    assert "at least 1" in call(tools.remove_preference(0))["error"]


def test_hand_edited_preference_file_keeps_its_other_lines(vault):
    prefs = vault / "Meta" / "prefs.md"
    prefs.parent.mkdir()
    prefs.write_text("# My prefs\n\nSome notes I wrote.\n- one\n* two\n")
    tools = VaultTools(vault, preferences_file="Meta/prefs.md")
    assert call(tools.list_preferences())["results"] == ["1. one", "2. two"]
    call(tools.remove_preference(1))
    call(tools.save_preference("three"))
    assert prefs.read_text() == "# My prefs\n\nSome notes I wrote.\n* two\n- three\n"


def test_log_interaction_appends_json_lines(tools, vault):
    r = call(tools.log_interaction("Summarise notes", "what did I do?", "Listed 3 notes", files=["a.md"]))
    assert r == {"success": True, "message": "Logged to .smartcontext/interactions.jsonl"}
    call(tools.log_interaction("Second", "q2", "s2", full_response="the whole answer"))
    lines = (vault / ".smartcontext" / "interactions.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [
        {"timestamp": "2024-03-15T09:30:05+01:00", "task_description": "Summarise notes", "query": "what did I do?",
         "summary": "Listed 3 notes", "files": ["a.md"]},
        {"timestamp": "2024-03-15T09:30:05+01:00", "task_description": "Second", "query": "q2", "summary": "s2",
         "files": [], "full_response": "the whole answer"},
    ]
    assert "missing required argument(s) summary" in call(tools.log_interaction("t", "q", None))["error"]


def test_concurrent_logging_never_interleaves_lines(tools, vault):
    def log(n):
        for i in range(20):
            tools.log_interaction(f"task {n}", "q" * 500, f"summary {n}-{i}")

    threads = [threading.Thread(target=log, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = (vault / ".smartcontext" / "interactions.jsonl").read_text().splitlines()
    assert len(lines) == 80 and all(json.loads(x)["query"] == "q" * 500 for x in lines)


def test_log_failure_is_an_error_response(vault):
    (vault / ".smartcontext").write_text("a file where the folder should be")
    r = call(VaultTools(vault).log_interaction("t", "q", "s"))
    assert r["success"] is False and r["error"].startswith("Logging failed")


def test_get_current_date(tools):
    assert call(tools.get_current_date()) == {
        "success": True, "date": "2024-03-15", "weekday": "Friday", "time": "09:30",
        "datetime": "2024-03-15T09:30:05+01:00"}


def test_get_current_date_defaults_to_the_real_clock(vault):
    before = dt.date.today().isoformat()
    r = call(VaultTools(vault).get_current_date())
    after = dt.date.today().isoformat()
    assert r["date"] in {before, after}  # a run across midnight may see either day
