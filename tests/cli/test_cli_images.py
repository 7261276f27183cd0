"""``dominds run/tell --image FILE`` (issue 33): the picture is stored in the dialog and reaches the model's
request as image content (the real Anthropic SDK against the fake server); what is not a picture is
refused before anything is sent."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import pytest
from test_cli_kit import cli_env, dominds, write_provider_workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))  # tests/llm is not a package
from dialects import AnthropicDialect, Script, Text
from fake_servers import RecordedRequest, fake_server_in_thread

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
TEAM_YAML = "member_defaults: {provider: fake-anthropic, model: fake-model, diligence_push_max: 0}\n" \
    "default_responder: lead\nmembers:\n  lead: {name: Lead}\n"  # fmt: skip
LLM_YAML = """\
providers:
  fake-anthropic:
    apiType: anthropic
    baseUrl: {url}
    apiKeyEnvVar: FAKE_CLI_IMAGES_KEY
    models:
      fake-model: {{context_length: 200000}}
"""


def _images(request: RecordedRequest) -> list[dict[str, object]]:
    return [b for m in request.body["messages"] for b in m["content"] if isinstance(b, dict) and b.get("type") == "image"]


@pytest.mark.slow
def test_run_and_tell_send_a_picture_to_the_model(tmp_path: Path) -> None:
    with fake_server_in_thread() as fake:
        fake.responder = lambda request: AnthropicDialect().reply(Script((Text("A red pixel."),)))
        ws = write_provider_workspace(tmp_path / "ws", TEAM_YAML, LLM_YAML.format(url=fake.url))
        (ws / "shot.png").write_bytes(PNG)
        env = cli_env(FAKE_CLI_IMAGES_KEY="sk-ant-cli-images-not-a-real-key")
        done = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "--image", "shot.png", "What is this?", "--json", env=env, timeout=240)
        assert done.returncode == 0, done.stderr
        [image] = _images(fake.requests[-1])
        assert image["source"] == {"type": "base64", "media_type": "image/png", "data": base64.b64encode(PNG).decode()}
        root_id = next(p.name for p in (ws / ".dialogs" / "run").iterdir())
        assert [p.name.startswith("upload-shot-") for p in (ws / ".dialogs" / "run" / root_id / "artifacts").iterdir()] == [True]

        done = dominds(ws, "tell", root_id, "And this one?", "--image", "shot.png", "--follow", env=env, timeout=240)
        assert done.returncode == 0, done.stderr
        assert len(_images(fake.requests[-1])) == 2, "both pictures of the course are sent (within the budget)"


def test_an_image_that_is_not_a_picture_is_refused_before_sending(tmp_path: Path) -> None:
    ws = write_provider_workspace(tmp_path / "ws", TEAM_YAML, LLM_YAML.format(url="http://127.0.0.1:9"))
    (ws / "notes.txt").write_text("not a picture")
    done = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "--image", "notes.txt", "Look")
    assert done.returncode == 2 and "--image notes.txt: not a PNG, JPEG, GIF or WebP picture" in done.stderr
    done = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "--image", "missing.png", "Look")
    assert done.returncode == 2 and "--image missing.png" in done.stderr
    assert not (ws / ".dialogs" / "run").exists() or not any((ws / ".dialogs" / "run").iterdir())
