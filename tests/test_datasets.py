import functools
import http.server
import json
import threading

import pytest
from conftest import SHARED_DATA
from servers import hopgraph

from hopgraph.memory.ids import page_id
from hopgraph.questions.datasets import (
    DATASETS,
    Question,
    convert,
    convert_mmlongbench,
    download,
    read_questions,
    write_questions,
)


def test_question_file_problems_are_reported_and_the_rest_kept(tmp_path):
    f = tmp_path / "q.jsonl"
    f.write_text(
        '{"id": "a", "question": "First?", "answers": "x"}\n'
        "not json\n"
        '{"id": "a", "question": "Again?"}\n'
        '{"id": "b", "question": "   "}\n'
        '{"id": "c", "question": "Third?", "evidence": ["text-1"]}\n'
    )
    questions, problems = read_questions(f)
    assert [q.id for q in questions] == ["a", "c"]
    assert questions[0].answers == ["x"]
    reasons = [p.reason for p in problems]
    assert reasons[0].startswith("bad JSON line")
    assert "duplicate id 'a' (the one on line 1 is kept)" in reasons[1]
    assert problems[1].where.endswith("q.jsonl:3: question a")
    assert reasons[2].startswith("empty question")


def test_one_bad_line_costs_that_line_only(tmp_path):
    """A non-UTF-8 byte, a null id or question and a control character each lose their own
    line, named by number, and every valid line still runs."""
    f = tmp_path / "q.jsonl"
    f.write_bytes(
        b'{"id": "a", "question": "First?"}\n'
        b'{"id": "b", "question": "Caf\xe9?"}\n'  # Latin-1, not UTF-8
        b'{"id": null, "question": null}\n'
        b'{"id": "c", "question": "tab\there"}\n'  # a raw control character
        b'{"id": "d", "question": null}\n'
        b'{"id": 7, "question": "Seventh?"}\n'
    )
    questions, problems = read_questions(f)
    assert [q.id for q in questions] == ["a", "7"]
    by_line = {p.where.split(":")[1]: p.reason for p in problems}
    assert by_line["2"] == "not UTF-8 (byte 0xe9 at column 29)"
    assert by_line["3"].startswith("missing id")
    assert by_line["4"] == "bad JSON line: Invalid control character at column 29"
    assert by_line["5"].startswith("empty question")


def test_write_then_read_round_trip(tmp_path):
    qs = [Question("1", "Q?", ["A"], ["text-x"], "bridge", doc="d.pdf", meta={"k": 1})]
    write_questions(qs, tmp_path / "out.jsonl")
    assert read_questions(tmp_path / "out.jsonl")[0] == qs


def test_mmlongbench_conversion(tmp_path):
    src = tmp_path / "samples.json"
    src.write_text(
        json.dumps(
            [
                {
                    "doc_id": "rep.pdf",
                    "doc_type": "Report",
                    "question": "Revenue?",
                    "answer": "5",
                    "evidence_pages": "[3, 4]",
                    "evidence_sources": "['Table']",
                    "answer_format": "Int",
                },
                {
                    "doc_id": "rep.pdf",
                    "doc_type": "Report",
                    "question": "CEO?",
                    "answer": "Not answerable",
                    "evidence_pages": "[]",
                    "evidence_sources": "[]",
                    "answer_format": "None",
                },
            ]
        )
    )
    a, b = convert_mmlongbench(src)
    assert a.evidence == [page_id("rep.pdf", 3), page_id("rep.pdf", 4)]
    assert (a.type, a.doc, a.meta["evidence_sources"]) == ("Int", "rep.pdf", ["Table"])
    assert b.evidence == [] and b.answers == ["Not answerable"] and a.id != b.id


@pytest.mark.skipif(not SHARED_DATA.exists(), reason="../shared/data is absent")
@pytest.mark.parametrize(
    "name, path, n",
    [
        ("hotpotqa", "hotpotqa/hotpotqa_train.json", 100),
        ("multimodalqa", "multimodalqa/MMQA_dev.jsonl.gz", 2441),
        ("mmlongbench", "mmlongbench/samples.json", 202),
    ],
)
def test_real_benchmark_files_convert(tmp_path, name, path, n):
    out = tmp_path / f"{name}.jsonl"
    assert convert(name, SHARED_DATA / path, out) == n
    questions, problems = read_questions(out)
    assert len(questions) == n and problems == []
    with_evidence = sum(bool(q.evidence) for q in questions)
    assert with_evidence >= 0.75 * n  # unanswerable MMLongBench questions have none


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def local_server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_download_from_a_mirror(local_server, tmp_path):
    root, url = local_server
    (root / "samples.json").write_text('[{"doc_id": "x.pdf"}]')
    (path,) = download("mmlongbench", tmp_path / "data", mirror=url)
    assert json.loads(path.read_text()) == [{"doc_id": "x.pdf"}]
    (root / "samples.json").write_text("changed")
    assert download("mmlongbench", tmp_path / "data", mirror=url)[0].read_text() != "changed"


def test_failed_download_leaves_no_partial_file(local_server, tmp_path):
    _, url = local_server
    with pytest.raises(RuntimeError, match="HTTP 404"):
        download("hotpotqa-dev", tmp_path / "data", mirror=url)
    assert list((tmp_path / "data").iterdir()) == []
    with pytest.raises(ValueError, match="unknown dataset"):
        download("nope", tmp_path)
    assert "multimodalqa" in DATASETS


def test_image_vqa_files_convert_with_their_images_resolved(tmp_path):
    from PIL import Image

    from hopgraph.questions.datasets import convert, read_questions

    (tmp_path / "images").mkdir()
    Image.new("RGB", (8, 8)).save(tmp_path / "images" / "oven_0001.jpg")
    Image.new("RGB", (8, 8)).save(tmp_path / "tower.png")
    infoseek = tmp_path / "infoseek.jsonl"
    infoseek.write_text(
        json.dumps(
            {
                "data_id": "val_1",
                "image_id": "oven_0001",
                "question": "Who built this?",
                "answer": ["Gustave Eiffel"],
                "answer_eval": ["Eiffel", {"range": [1, 2]}],
                "data_split": "val_unseen_entity",
                "entity_id": "Q243",
            }
        )
        + "\n"
        + json.dumps(
            {
                "data_id": "val_2",
                "image_id": "absent",
                "question": "What is it?",
                "answer": ["a bridge"],
            }
        )
        + "\n"
    )
    assert convert("image-vqa", infoseek, tmp_path / "a.jsonl") == 2
    first, second = read_questions(tmp_path / "a.jsonl")[0]
    assert first.images == [str((tmp_path / "images" / "oven_0001.jpg").resolve())]
    assert first.answers == ["Gustave Eiffel", "Eiffel"] and first.meta == {"entity_id": "Q243"}
    assert second.images == ["absent"]  # kept as given; the CLI warns (a run refuses it)

    evqa = tmp_path / "evqa.csv"
    evqa.write_text(
        "question,answer,dataset_image_ids,question_type,dataset_name\n"
        "In which year was this tower finished?,1889|1890,tower|other,templated,landmarks\n"
    )
    assert convert("image-vqa", evqa, tmp_path / "b.jsonl") == 1
    [q] = read_questions(tmp_path / "b.jsonl")[0]
    assert q.id == "evqa-00000" and q.answers == ["1889", "1890"]
    assert q.images == [str((tmp_path / "tower.png").resolve())] and q.type == "templated"


def test_data_convert_warns_about_images_that_are_not_there(tmp_path):
    src = tmp_path / "q.jsonl"
    src.write_text(json.dumps({"id": "x", "question": "What is this?", "image": "nope.jpg"}) + "\n")
    out = hopgraph("data", "convert", "image-vqa", src, "--jsonl", tmp_path / "out.jsonl")
    assert out.returncode == 0, out.stderr
    assert "1 question(s) name an image that is not there" in out.stdout


def test_a_questions_file_with_a_utf8_bom_keeps_its_first_line(tmp_path):
    """Notepad and Excel write a byte order mark first: the first line was lost as bad JSON."""
    from hopgraph.questions.datasets import read_questions

    lines = '{"id": "a", "question": "Why?"}\n{"id": "b", "question": "How?"}\n'
    (tmp_path / "q.jsonl").write_bytes(b"\xef\xbb\xbf" + lines.encode())
    (tmp_path / "a.json").write_bytes(b"\xef\xbb\xbf" + b'[{"id": "c", "question": "Who?"}]')
    questions, problems = read_questions(tmp_path / "q.jsonl")
    assert [q.id for q in questions] == ["a", "b"] and problems == []
    assert [q.id for q in read_questions(tmp_path / "a.json")[0]] == ["c"]


@pytest.mark.parametrize(
    "twin",
    [
        "Who wrote the libretto of The Lantern Bride?",  # NFD below: ó as o + a combining mark
        "Ｗｈｏ ｗｒｏｔｅ the libretto of The Lantern Bride?",  # fullwidth
        "Who wrote the lib\u200bretto of The Lantern Bride?",  # a zero-width space
        "Whо wrоte the librettо of The Lantern Bride?",  # Cyrillic о for o
    ],
)
def test_a_test_question_equal_but_for_unicode_form_is_a_training_one(tmp_path, twin):
    import json
    import unicodedata

    from hopgraph.optimizer.search import shared_questions

    asked = "Who wrote the libretto of the Lantern Bride in Córdoba?"
    (tmp_path / "train.jsonl").write_text(json.dumps({"id": "t1", "question": asked}) + "\n")
    variant = twin.replace("The Lantern Bride?", "the Lantern Bride in Córdoba?")
    for form in (variant, unicodedata.normalize("NFD", variant)):
        (tmp_path / "test.jsonl").write_text(json.dumps({"id": "x1", "question": form}) + "\n")
        assert shared_questions(tmp_path / "train.jsonl", tmp_path / "test.jsonl"), form


def test_a_test_question_with_another_script_s_digits_is_a_training_one(tmp_path):
    """Arabic-Indic digits (٣) for ASCII ones passed as a new question."""
    import json

    from hopgraph.optimizer.search import shared_questions

    (tmp_path / "train.jsonl").write_text(json.dumps({"id": "t", "question": "Who won in 1983?"}))
    (tmp_path / "test.jsonl").write_text(json.dumps({"id": "x", "question": "Who won in ١٩٨٣?"}))
    assert shared_questions(tmp_path / "train.jsonl", tmp_path / "test.jsonl")
