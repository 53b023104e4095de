import math
import time

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletion
from pydantic import BaseModel
from scripted import completion

from hopgraph.models.chat import ChatModel, extract_json, user
from hopgraph.models.embedded import free_port
from hopgraph.models.errors import (
    CapabilityError,
    EndpointError,
    ModelNotServedError,
    StructuredOutputError,
)


class Pair(BaseModel):
    city: str
    country: str


def test_plain_chat_and_event(endpoint):
    ep = endpoint(["Paris"])
    events = []
    model = ep.model_client(on_event=events.append)
    assert model.complete([user("capital of France?")], role="tester", template="t/x") == "Paris"
    assert ep.requests[0]["model"] == "scripted"
    (event,) = [e for e in events if e["event"] == "llm_call"]  # its llm_request aside
    assert event["event"] == "llm_call"
    assert (event["role"], event["template"]) == ("tester", "t/x")
    assert (event["prompt_tokens"], event["completion_tokens"]) == (7, 3)
    assert event["latency_s"] >= 0 and event["error"] is None


def test_structured_uses_json_schema_on_vllm(endpoint):
    ep = endpoint(['{"city": "Paris", "country": "France"}'], owned_by="vllm")
    out = ep.model_client().structured([user("x")], Pair, role="r")
    assert out == Pair(city="Paris", country="France")
    fmt = ep.requests[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"]["required"] == ["city", "country"]


def test_structured_uses_json_object_with_schema_on_llamacpp(endpoint):
    ep = endpoint(['```json\n{"city": "Rome", "country": "Italy"}\n```'], owned_by="me")
    out = ep.model_client().structured([user("x")], Pair, role="r")
    assert out.city == "Rome"
    fmt = ep.requests[0]["response_format"]
    assert fmt["type"] == "json_object" and "properties" in fmt["schema"]


def test_structured_repairs_once(endpoint):
    ep = endpoint(['{"city": "Paris"}', '{"city": "Paris", "country": "France"}'])
    events = []
    out = ep.model_client(on_event=events.append).structured([user("x")], Pair, role="r")
    assert out.country == "France"
    repair = ep.requests[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"city": "Paris"}'}
    assert "country" in repair[-1]["content"]  # the validation error is sent back
    assert [e["extra"]["repair"] for e in events] == [False, True]


class Note(BaseModel):
    title: str
    body: str


def test_a_raw_line_break_inside_a_string_is_read_not_repaired(endpoint):
    """Small models write long fields with real line breaks and tabs inside JSON strings
    (2 of the 5 passages whose triplets failed on qwen2.5-coder-1.5b): the reply means what
    it says, so it is read as written, with no repair call (before: two calls, then a
    failure)."""
    body = "\n".join(f"Line {i}:\tthe town's mill was rebuilt in {1800 + i}." for i in range(40))
    reply = '{"title": "Mills", "body": "' + body + '"}'
    ep = endpoint([reply, '{"title": "Mills", "body": "one line"}'])
    events = []
    out = ep.model_client(on_event=events.append).structured([user("x")], Note, role="r")
    assert out.body == body and len(ep.requests) == 1
    (call,) = [e for e in events if e["event"] == "llm_call"]
    assert call["parsed"]["body"] == body


def test_a_reply_cut_inside_a_string_is_still_repaired(endpoint):
    ep = endpoint(['{"title": "Mills", "body": "the mill\nwas', '{"title": "M", "body": "b"}'])
    out = ep.model_client().structured([user("x")], Note, role="r")
    assert out.body == "b" and len(ep.requests) == 2


def test_structured_gives_up_with_raw_text(endpoint):
    ep = endpoint(["not json at all", "still not json"])
    with pytest.raises(StructuredOutputError) as info:
        ep.model_client().structured([user("x")], Pair, role="planner")
    assert info.value.raw == "still not json"
    assert "planner" in str(info.value) and "Pair" in str(info.value)


def test_a_role_that_asks_no_repair_is_not_said_to_have_had_one(endpoint):
    """MMAPG's triplet converter asks no repair (a re-ask would only be cut again); its
    failures said "after one repair" all the same, in every skipped passage's line."""
    ep = endpoint(['{"city": "Paris", "country'])
    with pytest.raises(StructuredOutputError) as info:
        ep.model_client().structured([user("x")], Pair, role="r", repair=False)
    assert "no repair asked" in str(info.value) and "after one repair" not in str(info.value)
    assert len(ep.requests) == 1


def test_p_yes_from_top_logprobs(endpoint):
    import math

    top = [("Yes", math.log(0.6)), (" yes", math.log(0.1)), ("No", math.log(0.2)), ("Maybe", -1)]
    ep = endpoint([completion("Yes", top=top)])
    p = ep.model_client().p_yes([user("Is it?")], role="r")
    assert p == pytest.approx(0.7 / 0.9)
    req = ep.requests[0]
    assert (req["max_tokens"], req["temperature"], req["logprobs"], req["top_logprobs"]) == (
        1,
        0.0,
        True,
        20,
    )


@pytest.mark.parametrize("top", [[("Maybe", -0.1), ("The", -2.0)], None, []])
def test_p_yes_fallback_when_no_yes_no(endpoint, top, caplog):
    ep = endpoint([completion("Maybe", top=top)])
    events = []
    p = ep.model_client(on_event=events.append).p_yes([user("?")], role="judge")
    assert p == 0.5
    (fallback,) = [e for e in events if e["event"] == "fallback"]
    assert fallback["role"] == "judge" and fallback["used"] == 0.5
    assert "falls back" in caplog.text


def test_retries_5xx_then_succeeds(endpoint):
    ep = endpoint([httpx.Response(503, json={"error": "busy"}), "ok"])
    events = []
    assert ep.model_client(on_event=events.append).complete([user("x")], role="r") == "ok"
    assert events[-1]["attempts"] == 2


def test_5xx_retries_are_bounded_by_max_retries(endpoint):
    ep = endpoint([httpx.Response(500, json={"error": "x"})] * 5)
    with pytest.raises(EndpointError, match=r"HTTP 500 after 4 attempt"):
        ep.model_client(max_retries=3).complete([user("x")], role="r")
    assert len(ep.requests) == 4  # the first, and three retries: what max_retries says
    ep = endpoint([httpx.Response(500, json={"error": "x"})] * 2)
    with pytest.raises(EndpointError, match=r"after 1 attempt"):
        ep.model_client(max_retries=0).complete([user("x")], role="r")


def test_a_timed_out_request_is_not_sent_again(endpoint):
    """Against vLLM a read timeout usually means a loaded server still working on the request;
    a re-send would queue behind everything else and double its cost."""

    def slow(_body):
        return httpx.ReadTimeout("read timed out")

    ep = endpoint([slow, "late"])
    with pytest.raises(EndpointError, match="timed out after 1 attempt"):
        ep.model_client(max_retries=3).complete([user("x")], role="r")
    assert len(ep.requests) == 1


def test_4xx_is_not_retried(endpoint):
    ep = endpoint([httpx.Response(400, json={"error": {"message": "bad"}}), "never"])
    with pytest.raises(EndpointError, match="HTTP 400"):
        ep.model_client().complete([user("x")], role="r")
    assert len(ep.requests) == 1


def test_connection_errors_are_retried(endpoint):
    def refuse(_body):
        return httpx.ConnectError("refused")

    ep = endpoint([refuse, "back"])
    assert ep.model_client().complete([user("x")], role="r") == "back"


def test_endpoint_down_fails_fast_naming_the_url():
    port = free_port()  # nothing listens there
    model = ChatModel(f"http://127.0.0.1:{port}/v1", "m", max_retries=2)
    began = time.monotonic()
    with pytest.raises(EndpointError, match=f"127.0.0.1:{port}"):
        model.complete([user("x")], role="r")
    assert time.monotonic() - began < 15


def test_model_not_served_names_what_is_served(endpoint):
    ep = endpoint([], model="served-one")
    client = httpx.Client(transport=httpx.MockTransport(ep.handler))
    model = ChatModel("http://scripted.test/v1", "other", http_client=client)
    with pytest.raises(ModelNotServedError, match=r"'other'.*served-one"):
        model.complete([user("x")], role="r")


def test_images_refused_on_llamacpp_before_sending(endpoint, tmp_path):
    from PIL import Image

    Image.new("RGB", (8, 8)).save(tmp_path / "a.png")
    ep = endpoint([], owned_by="me")
    with pytest.raises(CapabilityError, match="image"):
        ep.model_client().complete([user("look", images=[tmp_path / "a.png"])], role="r")
    assert ep.requests == []


def test_images_travel_as_data_urls(endpoint, tmp_path):
    from PIL import Image

    Image.new("RGB", (4000, 3000), "blue").save(tmp_path / "big.jpg")
    ep = endpoint(["blue"], owned_by="vllm")
    model = ep.model_client(max_image_pixels=100_000)
    msg = user("color?", images=[tmp_path / "big.jpg"], max_pixels=model.max_image_pixels)
    assert model.complete([msg], role="vlm") == "blue"
    parts = ep.requests[0]["messages"][0]["content"]
    assert parts[0]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert parts[1] == {"type": "text", "text": "color?"}  # after the image: a shared prefix


def test_extract_json():
    assert extract_json('Sure! {"a": 1} done') == '{"a": 1}'
    assert extract_json('```json\n{"a": {"b": 2}}\n```') == '{"a": {"b": 2}}'


def _llamacpp(server, timeout, *, stream):
    from scripted_server import ScriptedServer  # noqa: F401 - the server is the caller's

    return ChatModel(
        server.base_url,
        "scripted",
        backend="llamacpp",
        timeout=timeout,
        max_retries=3,
        stream=stream,
        count_prompt_tokens=lambda m: 7,
    )


def test_a_long_prefill_under_keepalive_pings_is_progress_not_a_timeout():
    """A busy CPU makes prefill outlast request_timeout. One wall-clock limit failed the call
    and re-sent the prompt to a server still working on it; the streamed call
    waits while the server's pings arrive, and sends the prompt once."""
    from scripted_server import ScriptedServer

    with ScriptedServer(lambda body: "the Danube", delay=1.5, ping=0.1) as server:
        with pytest.raises(EndpointError, match="timed out"):
            _llamacpp(server, 0.4, stream=False).complete([user("Which river?")], role="r")
        assert server.calls == 1  # a timed-out request is not sent again
        events = []
        model = _llamacpp(server, 0.4, stream=True)
        model.on_event = events.append
        server.calls = 0
        assert model.complete([user("Which river?")], role="r") == "the Danube"
        assert server.calls == 1
    (call,) = [e for e in events if e["event"] == "llm_call"]
    assert (call["prompt_tokens"], call["completion_tokens"], call["attempts"]) == (7, 2, 1)


@pytest.mark.parametrize(
    "ping, message", [(0.1, "no token for"), (0.0, "nothing from the server for")]
)
def test_a_stalled_stream_fails_once_naming_the_stall(ping, message):
    from scripted_server import ScriptedServer

    with ScriptedServer(lambda body: "one two three", stall=3.0, ping=ping) as server:
        with pytest.raises(EndpointError, match=f"timed out after 1 attempt.*{message}"):
            _llamacpp(server, 0.5, stream=True).complete([user("Count.")], role="r")
        assert server.calls == 1  # never re-sent to a server that may still be on it


def test_the_first_token_wait_is_bounded(monkeypatch):
    from scripted_server import ScriptedServer

    from hopgraph.models import transport

    monkeypatch.setattr(transport, "FIRST_TOKEN_FACTOR", 3)
    with ScriptedServer(lambda body: "late", delay=5.0, ping=0.05) as server:
        with pytest.raises(EndpointError, match="no first token after"):
            _llamacpp(server, 0.3, stream=True).complete([user("Now?")], role="r")
        assert server.calls == 1


def test_a_streamed_5xx_is_retried_and_names_the_status():
    from scripted_server import ScriptedServer

    def fail(body):
        raise RuntimeError("model crashed")

    with ScriptedServer(fail) as server:
        with pytest.raises(EndpointError, match="HTTP 500"):
            _llamacpp(server, 1.0, stream=True).complete([user("Hi")], role="r")
        assert server.calls == 4  # the first, and max_retries = 3 more


def test_vllm_requests_carry_the_sampling_we_mean(endpoint):
    """vLLM fills every sampling field a request leaves out from the model's
    generation_config (Qwen2.5-VL: top_k 1, top_p 0.001, repetition_penalty 1.05): a sampled
    QDARF plan would come out greedy and every call penalised. Each field is sent."""
    ep = endpoint([completion("a"), completion("b")])
    m = ep.model_client()
    m.complete([user("x")], role="r", temperature=0.8)
    m.p_yes([user("x")], role="r")
    for body in ep.requests:
        assert body["top_p"] == 1.0 and body["top_k"] == -1 and body["repetition_penalty"] == 1.0
    assert ep.requests[0]["temperature"] == 0.8
    llama = endpoint([completion("a")], owned_by="me")  # llama.cpp: its own fields, not vLLM's
    llama.model_client().complete([user("x")], role="r")
    assert "repetition_penalty" not in llama.requests[0]


@pytest.mark.parametrize("owned_by", ["me", "llamacpp"])
def test_llama_cpp_requests_carry_every_sampling_field(endpoint, owned_by):
    """llama-cpp-python's server applies a repeat penalty of 1.1 at temperature 0 and
    llama-server none: an answer must not depend on which engine serves it, so both get every
    sampling field (the values the committed records were made with), streamed or not."""
    from hopgraph.models.chat import LLAMACPP_SAMPLING

    ep = endpoint([completion("a"), completion("b")], owned_by=owned_by)
    m = ep.model_client()
    m.complete([user("x")], role="r")
    m.p_yes([user("x")], role="r")
    for body in ep.requests:
        assert {k: body[k] for k in LLAMACPP_SAMPLING} == LLAMACPP_SAMPLING
        assert "extra_body" not in body
    from scripted_server import ScriptedServer

    with ScriptedServer(lambda body: "ok") as server:  # the embedded server's streamed path
        _llamacpp(server, 5, stream=True).complete([user("x")], role="r")
        (body, _), *_ = server.log
    assert {k: body[k] for k in LLAMACPP_SAMPLING} == LLAMACPP_SAMPLING
    assert body["stream"] is True and "extra_body" not in body


def test_yes_and_no_are_read_through_byte_level_markers():
    from hopgraph.models.chat import p_yes_from_response, token_ids_instead_of_text

    resp = ChatCompletion.model_validate(completion("Yes", top=[("ĠYes", -0.1), ("▁No", -2.4)]))
    p, found = p_yes_from_response(resp)
    assert found and p == pytest.approx(math.exp(-0.1) / (math.exp(-0.1) + math.exp(-2.4)))
    ids = ChatCompletion.model_validate(completion("x", top=[("token_id:9454", -0.1)]))
    assert token_ids_instead_of_text(ids) and not token_ids_instead_of_text(resp)


def test_a_500_that_refuses_an_image_is_not_sent_again(endpoint):
    import httpx

    refusal = httpx.Response(
        500,
        json={
            "message": "height:10 or width:3000 must be larger than factor:28",
            "type": "BadRequestError",
        },
    )
    ep = endpoint([refusal, completion("late")])
    with pytest.raises(EndpointError, match="HTTP 500"):
        ep.model_client(max_retries=3).complete([user("x")], role="r")
    assert len(ep.requests) == 1


def test_tiny_and_extreme_images_are_padded_for_the_vlm():
    from PIL import Image

    from hopgraph.models.images import MAX_ASPECT, MIN_SIDE, pad_for_vlm

    for size in ((10, 3000), (3000, 10), (12, 12), (20000, 30), (40, 12000)):
        w, h = pad_for_vlm(Image.new("RGB", size, "red")).size
        assert min(w, h) >= MIN_SIDE and max(w, h) / min(w, h) <= MAX_ASPECT, size
        assert w >= size[0] and h >= size[1]  # padded, never cut
    same = Image.new("RGB", (300, 200))
    assert pad_for_vlm(same) is same


def test_a_structured_reply_cut_at_max_tokens_is_repaired_with_more_room(endpoint):
    cut = completion('{"city": "Par' + " " * 20)
    cut["choices"][0]["finish_reason"] = "length"
    ep = endpoint([cut, '{"city": "Paris", "country": "France"}'])
    out = ep.model_client().structured([user("x")], Pair, role="r", max_tokens=40)
    assert out.country == "France"
    assert [r["max_tokens"] for r in ep.requests] == [40, 80]
    assert "cut at 40 tokens" in ep.requests[1]["messages"][-1]["content"]


def test_doctor_probes_the_vlm_with_as_many_images_as_one_call_sends(endpoint):
    """With a separate VLM, the image probe goes to it, with MAB-DQA's top pages plus the
    question's image in one request; a server limited to fewer images says no before a run,
    and one that returns token ids instead of tokens fails its P(Yes) probe loudly."""
    import httpx

    from hopgraph.graphs import every_context

    Context = every_context()
    from hopgraph.graphs.mabdqa import images_per_call
    from hopgraph.models.doctor import diagnose_vlm

    n = images_per_call(Context())
    assert n == Context().mabdqa_top_pages + 1

    def limited(body):  # a vLLM started with --limit-mm-per-prompt '{"image": 2}'
        pictures = sum(
            p.get("type") == "image_url"
            for m in body["messages"]
            if isinstance(m["content"], list)
            for p in m["content"]
        )
        if pictures > 2:
            return httpx.Response(400, json={"message": "At most 2 image(s) may be provided"})
        return completion("Yes", top=[("token_id:9454", -0.1)])

    ep = endpoint([limited, limited], model="vl")
    rows = {r.capability: r for r in diagnose_vlm(ep.model_client(), n)}
    assert not rows[f"VLM image input ({n} per call)"].ok
    assert "At most 2 image" in rows[f"VLM image input ({n} per call)"].detail
    assert not rows["VLM logprobs / P(Yes)"].ok
    assert "token_id" in rows["VLM logprobs / P(Yes)"].detail
    assert sum(p.get("type") == "image_url" for p in ep.requests[0]["messages"][0]["content"]) == n


def test_doctor_says_which_methods_the_endpoint_serves():
    """A text-only endpoint runs every method but PolarMem on questions without images; a VLM
    that takes the images makes every method whole; an endpoint without logprobs (vLLM left at
    --max-logprobs 0) cannot rerank or judge by P(Yes), so QDRAG and MAB-DQA say no."""
    from hopgraph.graphs import endpoint_needs
    from hopgraph.models.doctor import Probe
    from hopgraph.models.doctor import method_support as support

    def method_support(rows):
        return support(rows, endpoint_needs())

    llama = [
        Probe("chat", True, ""),
        Probe("structured output", True, ""),
        Probe("logprobs / P(Yes)", True, ""),
        Probe("image input", False, ""),
    ]
    verdicts = {m: v for m, v, _ in method_support(llama)}
    assert verdicts == {
        "direct": "text only",
        "rag": "text only",
        "qdrag": "text only",
        "mmapg": "text only",
        "mabdqa": "text only",
        "polarmem": "no",
    }
    with_vlm = [
        *llama[:3],
        Probe("VLM image input (5 per call)", True, ""),
        Probe("VLM logprobs / P(Yes)", True, ""),
    ]
    assert {v for _, v, _ in method_support(with_vlm)} == {"yes"}
    no_logprobs = [llama[0], llama[1], Probe("logprobs / P(Yes)", False, ""), with_vlm[3]]
    rows = {m: (v, d) for m, v, d in method_support(no_logprobs)}
    assert rows["qdrag"] == ("no", "logprobs / P(Yes)") and rows["rag"] == ("yes", "")


def test_a_doctor_probe_failing_with_an_empty_message_is_a_row_naming_its_type():
    """A probe's failure is a row, never raised: one raising ``ValueError()`` (no text) is
    named by its type, where the first line of its empty text was an IndexError."""
    from hopgraph.models.doctor import _attempted

    def probe():
        raise ValueError()

    row = _attempted("structured output", probe)
    assert (row.ok, row.detail) == (False, "ValueError")


def test_doctor_tells_each_probe_and_knows_a_text_only_server_takes_no_image(endpoint):
    """issue 72: the embedded (llama.cpp) model's lack of image input was reported as a failure
    after three attempts, 40 s with nothing shown."""
    from hopgraph.models.doctor import _image, diagnose

    ep = endpoint([], owned_by="me")  # llama-cpp-python's server
    ok, detail = _image(ep.model_client())
    assert not ok and "text only" in detail and "vlm_base_url" in detail
    assert ep.requests == []  # known without asking
    told = []
    ep = endpoint(['{"city": "Paris", "country": "France"}'] * 40, owned_by="me")
    diagnose(ep.model_client(max_retries=0), on_probe=told.append)
    assert told[:4] == ["chat", "structured output", "logprobs / P(Yes)", "image input"]


@pytest.mark.parametrize("reports", [True, False])
def test_a_streamed_call_records_its_wait_for_the_first_token_and_the_server_s_times(reports):
    """The waterfall could not tell the engine's queue from the method: six examinations
    sent at once were answered one after another, and nothing said so. A streamed call keeps
    its wait for the first token; where the server reports its times (llama.cpp's
    ``timings``), the prompt's reading and the time queued before the server began it."""
    from scripted_server import ScriptedServer

    timings = {"prompt_ms": 200.0, "predicted_ms": 50.0} if reports else None
    with ScriptedServer(lambda body: "the Danube", delay=0.6, timings=timings) as server:
        events = []
        model = _llamacpp(server, 10, stream=True)
        model.on_event = events.append
        assert model.complete([user("Which river?")], role="r") == "the Danube"
    (call,) = [e for e in events if e["event"] == "llm_call"]
    served = call["extra"]["served"]
    assert 0.6 <= served["first_token_s"] <= call["latency_s"]
    if reports:
        assert (served["prompt_s"], served["decode_s"]) == (0.2, 0.05)
        assert served["queued_s"] == round(served["first_token_s"] - 0.2, 4) >= 0.4
    else:
        assert set(served) == {"first_token_s"}


def test_a_client_for_a_real_endpoint_is_built_with_openai_s_own_timeout():
    """No scripted http client: openai builds its own (httpx2's), which since httpx2 2.17
    refuses httpx's Timeout; every call to a real server failed at construction."""
    model = ChatModel("http://127.0.0.1:9/v1", "m", timeout=30.0)
    timeout = model.transport.client.timeout
    assert isinstance(timeout, openai.Timeout)
    assert (timeout.connect, timeout.read) == (5.0, 30.0)
