import pytest

from smartcontext.config import Config
from smartcontext.errors import ConfigError


def test_defaults_without_a_file(tmp_path):
    cfg = Config.load(tmp_path)
    assert cfg.embeddings.model == "local:static" and cfg.embeddings.active
    assert cfg.context.max_tokens == 8000 and cfg.source is None


def test_reads_smartcontext_toml(tmp_path):
    (tmp_path / "smartcontext.toml").write_text(
        '[index]\nexclude = ["legacy/**"]\n[embeddings]\nmodel = "none"\n[context]\nmax_tokens = 2000\n'
    )
    cfg = Config.load(tmp_path)
    assert cfg.index.exclude == ["legacy/**"]
    assert not cfg.embeddings.active
    assert cfg.context.max_tokens == 2000


def test_reads_vault_toml_plugin_table(tmp_path):
    (tmp_path / ".vault.toml").write_text(
        '[vault]\nname = "x"\n[plugins.smart_context.embeddings]\nmodel = "openai/text-embedding-3-small"\n'
    )
    assert Config.load(tmp_path).embeddings.model == "openai/text-embedding-3-small"


@pytest.mark.parametrize(
    "text, message",
    [
        ("[index\n", "not valid TOML"),
        ("[nonsense]\nx = 1\n", "unknown section"),
        ("[index]\nmax_file_bytes = 'big'\n", "must be an integer"),
        ("[index]\nbogus = 1\n", "unknown key"),
        ("[index]\nexclude = 'x'\n", "list of strings"),
        ("[chat]\nhistory_tokens = -1\n", r"\[chat\] history_tokens must be 0 .* or a positive number"),
        ("[chat]\ncontext_tokens = 1.5\n", "must be an integer"),
        ("[index]\nexclude = ['build/', '!']\n", r"\[index\] exclude: '!' is not a gitignore-style pattern"),
        # TOML's "\\" is one backslash, a pattern pathspec cannot read.
        ('[index]\ninclude = ["\\\\"]\n', r"\[index\] include: .* is not a gitignore-style pattern"),
    ],
)
def test_bad_config_gets_a_clear_error(tmp_path, text, message):
    (tmp_path / "smartcontext.toml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        Config.load(tmp_path)


def test_chats_keep_minilm_unless_told(tmp_path):
    from smartcontext import Workspace

    ws = Workspace.open(tmp_path)
    assert ws.config.chat.embedding_model == "local:minilm"
    assert ws.chats().embedder().name.startswith("local:all-MiniLM-L6-v2")
    assert ws.embedder().name.startswith("local:static-minilm")
    (tmp_path / "smartcontext.toml").write_text('[chat]\nembedding_model = ""\n')
    ws = Workspace.open(tmp_path)
    assert ws.chats().embedder() is ws.embedder()


def test_the_chat_budgets_default_and_read(tmp_path):
    cfg = Config.load(tmp_path)
    assert (cfg.chat.history_tokens, cfg.chat.context_tokens) == (4000, 1500)
    (tmp_path / "smartcontext.toml").write_text("[chat]\nhistory_tokens = 8000\ncontext_tokens = 0\n")
    cfg = Config.load(tmp_path)
    assert (cfg.chat.history_tokens, cfg.chat.context_tokens) == (8000, 0)
