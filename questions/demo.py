"""The demo corpus: an invented coastal country, written by hopgraph itself.

Everything here is fiction made up for hopgraph (no benchmark text), so a model cannot answer
from memory and must retrieve: passages, a table of regatta winners, and images drawn with
Pillow whose captions carry facts found nowhere else. ``write_demo(dir)`` writes
``dir/corpus/`` (indexable with ``hopgraph index``) and ``dir/questions.jsonl`` with gold answers
and gold evidence ids that match the ids the index gives.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from PIL import Image, ImageDraw

from hopgraph.memory.ids import image_key, passage_id, passage_key
from hopgraph.memory.kb import item_id
from hopgraph.memory.sources import row_sentence

PASSAGES: dict[str, str] = {
    "Marrowick": "Marrowick is a river port in the northern province of Esterlund, at the mouth of "
    "the Lind. It was founded in 1412 by the shipwright Odile Varn. The town is known for its "
    "copper-roofed lighthouse and for the Kestrel Cup rowing regatta.",
    "Odile Varn": "Odile Varn (1380-1451) was a shipwright from the fishing village of Temsa. Besides "
    "founding the town of Marrowick, she designed the three-masted merchant ship Grey Heron.",
    "Temsa": "Temsa is a fishing village on the Salt Coast with about 2,300 inhabitants. It holds a "
    "kite festival every April.",
    "Grey Heron (ship)": "The Grey Heron was a merchant ship launched in 1430. It carried wool "
    "between Marrowick and Caldra until a storm sank it in 1447.",
    "Caldra": "Caldra is the capital of the southern province of Southmere and the largest port on "
    "the Amber Sea. The University of Caldra was founded in 1502.",
    "Esterlund": "Esterlund is a northern province whose capital is Harrowgate. Its official flower "
    "is the blue thistle.",
    "Harrowgate": "Harrowgate is a walled city on the Lind river with about 84,000 inhabitants. Its "
    "cathedral was completed in 1389.",
    "Southmere": "Southmere is a southern province known for its vineyards. Its official flower is "
    "the red poppy.",
    "Ilse Brandt": "Ilse Brandt is a composer born in Harrowgate in 1961. Her best-known work is the "
    "opera The Lantern Bride.",
    "The Lantern Bride": "The Lantern Bride is an opera in three acts by Ilse Brandt. It premiered in "
    "Caldra in 1994, and its libretto was written by the poet Mateo Quill.",
    "Mateo Quill": "Mateo Quill (1955-2020) was a poet born in Temsa. He wrote librettos and several "
    "books of sea poems, among them Salt and Silver.",
    "Jonas Pell": "Jonas Pell is a painter born in Caldra in 1948. His best-known painting, Harbour "
    "at Dusk, shows the lighthouse of Marrowick.",
    "Harbour at Dusk": "Harbour at Dusk is an oil painting by Jonas Pell, finished in 1979. It hangs "
    "in the Caldra Museum of Art.",
    "Caldra Museum of Art": "The Caldra Museum of Art opened in 1921 and holds about 4,000 works, "
    "most of them by painters of the Amber Sea coast.",
    "Lind (river)": "The Lind rises in the Grey Hills and flows 310 kilometres to the Amber Sea, "
    "passing Harrowgate before it reaches Marrowick.",
    "Sorrel (river)": "The Sorrel is a river of Southmere, 240 kilometres long, that joins the Amber "
    "Sea near Caldra.",
    "Amber Sea": "The Amber Sea is a shallow inland sea bordered by Esterlund to the north and "
    "Southmere to the south.",
    "Kestrel Cup": "The Kestrel Cup is a rowing regatta held every summer in Marrowick since 1890. "
    "Crews race four kilometres down the Lind.",
    "Tessa Horn": "Tessa Horn is a rower born in Temsa in 1996. She won the Kestrel Cup in 2019.",
    "Piet Oldam": "Piet Oldam is a rower from Harrowgate, born in 1990, who coaches young crews.",
    "Grey Hills": "The Grey Hills are a range of low granite hills in western Esterlund where the "
    "Lind has its source.",
    "Salt Coast": "The Salt Coast is the stretch of Esterlund's shore between Temsa and Marrowick, "
    "known for its salt pans.",
    "Harrowgate Cathedral": "Harrowgate Cathedral was begun in 1301 and completed in 1389. Its bell "
    "tower is 72 metres tall.",
    "Salt and Silver": "Salt and Silver is a book of sea poems by Mateo Quill, published in 1988.",
    "Caldra Harbour": "Caldra Harbour handles most of the grain shipped across the Amber Sea.",
    "Blue thistle": "The blue thistle is a spiny wildflower of the northern hills that blooms in "
    "late summer.",
}

TABLE_NAME = "Kestrel Cup winners"
TABLE_HEADER = ["Year", "Winner", "Club", "Time"]
TABLE_ROWS = [
    ["2016", "Piet Oldam", "Harrowgate Oars", "14:02"],
    ["2017", "Nell Sarrow", "Caldra Rowing Club", "13:55"],
    ["2018", "Piet Oldam", "Harrowgate Oars", "13:49"],
    ["2019", "Tessa Horn", "Temsa Sculls", "13:41"],
    ["2020", "Arno Vey", "Caldra Rowing Club", "14:10"],
    ["2021", "Tessa Horn", "Temsa Sculls", "13:38"],
    ["2022", "Bram Eller", "Harrowgate Oars", "13:52"],
]

# file name -> (caption, drawing function name)
IMAGES: dict[str, str] = {
    "flag_of_esterlund.png": "The flag of Esterlund: a blue thistle on a green field.",
    "marrowick_lighthouse.png": "The copper-roofed lighthouse of Marrowick, painted in red and "
    "white horizontal stripes.",
    "caldra_coat_of_arms.png": "The coat of arms of Caldra: a golden key on a purple shield.",
    "grey_heron_ship.png": "A drawing of the merchant ship Grey Heron with three masts and grey "
    "sails.",
}


def _draw(name: str) -> Image.Image:
    im = Image.new("RGB", (320, 240), "white")
    d = ImageDraw.Draw(im)
    if name == "flag_of_esterlund.png":
        d.rectangle([0, 0, 320, 240], fill=(30, 120, 50))
        d.ellipse([120, 80, 200, 160], fill=(60, 80, 200))
    elif name == "marrowick_lighthouse.png":
        d.rectangle([0, 0, 320, 240], fill=(180, 210, 240))
        for i, y in enumerate(range(60, 230, 20)):
            d.rectangle([140, y, 180, y + 20], fill="red" if i % 2 == 0 else "white")
        d.polygon([(130, 60), (190, 60), (160, 25)], fill=(184, 115, 51))
    elif name == "caldra_coat_of_arms.png":
        d.polygon([(90, 30), (230, 30), (230, 140), (160, 215), (90, 140)], fill=(110, 40, 140))
        d.ellipse([135, 60, 185, 110], outline=(230, 190, 40), width=8)
        d.rectangle([155, 105, 165, 185], fill=(230, 190, 40))
    else:
        d.rectangle([0, 170, 320, 240], fill=(40, 80, 140))
        d.polygon([(60, 170), (260, 170), (230, 200), (90, 200)], fill=(90, 60, 30))
        for x in (110, 160, 210):
            d.line([x, 60, x, 170], fill=(60, 40, 20), width=4)
            d.rectangle([x - 25, 70, x + 25, 140], fill=(150, 150, 150))
    return im


def _row_id(r: int) -> str:
    return item_id(
        "table", passage_key(TABLE_NAME, row_sentence(TABLE_NAME, TABLE_HEADER, TABLE_ROWS[r], r))
    )


QUESTIONS = [  # id, question, gold answers, gold evidence, type
    ('demo-01',
     'In which year was the town founded by the designer of the Grey Heron founded?',
     ['1412'], ['Odile Varn', 'Marrowick'], 'bridge'),
    ('demo-02',
     'Who wrote the libretto of the best-known opera by the composer born in Harrowgate in 1961?',
     ['Mateo Quill'], ['Ilse Brandt', 'The Lantern Bride'], 'bridge'),
    ('demo-03',
     'In which village was the librettist of The Lantern Bride born?',
     ['Temsa'], ['The Lantern Bride', 'Mateo Quill'], 'bridge'),
    ('demo-04',
     'What is the official flower of the province in which Marrowick lies?',
     ['blue thistle', 'the blue thistle'], ['Marrowick', 'Esterlund'], 'bridge'),
    ('demo-05',
     'Where does the painting that shows the lighthouse of Marrowick hang?',
     ['Caldra Museum of Art', 'the Caldra Museum of Art'], ['Jonas Pell', 'Harbour at Dusk'], 'bridge'),
    ('demo-06',
     'Which is older, the town of Marrowick or the University of Caldra?',
     ['Marrowick', 'the town of Marrowick'], ['Marrowick', 'Caldra'], 'comparison'),
    ('demo-07',
     'Who was born earlier, Ilse Brandt or Jonas Pell?',
     ['Jonas Pell'], ['Ilse Brandt', 'Jonas Pell'], 'comparison'),
    ('demo-08',
     'Which river is longer, the Lind or the Sorrel?',
     ['Lind', 'the Lind'], ['Lind (river)', 'Sorrel (river)'], 'comparison'),
    ('demo-09',
     'What colour is the field of the flag of the province whose capital is Harrowgate?',
     ['green'], ['Esterlund', 'image:flag_of_esterlund.png'], 'image'),
    ('demo-10',
     'What is shown on the coat of arms of the city where The Lantern Bride premiered?',
     ['a golden key', 'golden key'], ['The Lantern Bride', 'image:caldra_coat_of_arms.png'], 'image'),
    ('demo-11',
     "What colours are the stripes of the lighthouse shown in Jonas Pell's best-known painting?",
     ['red and white'], ['Jonas Pell', 'image:marrowick_lighthouse.png'], 'image'),
    ('demo-12',
     'In which village was the rower who won the Kestrel Cup in 2019 born?',
     ['Temsa'], ['row:2019', 'Tessa Horn'], 'table'),
    ('demo-13',
     'Which club won the Kestrel Cup in 2020?',
     ['Caldra Rowing Club'], ['row:2020'], 'table'),
    ('demo-14',
     'How many masts did the ship designed by the founder of Marrowick have?',
     ['three', '3'], ['Marrowick', 'Odile Varn'], 'bridge'),
]  # fmt: skip
"""The demo questions. Evidence names a passage by its title, an image by ``image:FILE`` and a
table row by ``row:YEAR``."""


def _questions(image_ids: dict[str, str]) -> list[dict]:
    p = {title: passage_id(title, text) for title, text in PASSAGES.items()}
    year_row = {row[0]: r for r, row in enumerate(TABLE_ROWS)}

    def item(ref: str) -> str:
        kind, _, name = ref.partition(":")
        if kind == "image":
            return image_ids[name]
        return _row_id(year_row[name]) if kind == "row" else p[ref]

    return [
        {
            "id": qid,
            "question": question,
            "answers": answers,
            "evidence": [item(ref) for ref in evidence],
            "type": qtype,
        }
        for qid, question, answers, evidence, qtype in QUESTIONS
    ]


def write_demo(folder: str | Path) -> tuple[Path, Path]:
    """Write the demo corpus and questions; returns (corpus folder, questions file)."""
    root = Path(folder)
    corpus = root / "corpus"
    (corpus / "images").mkdir(parents=True, exist_ok=True)
    with open(corpus / "passages.jsonl", "w", encoding="utf-8") as f:
        for title, text in PASSAGES.items():
            f.write(json.dumps({"title": title, "text": text}) + "\n")
    with open(
        corpus / f"{TABLE_NAME.replace(' ', '_')}.csv", "w", encoding="utf-8", newline=""
    ) as f:
        writer = csv.writer(f)
        writer.writerow(TABLE_HEADER)
        writer.writerows(TABLE_ROWS)
    image_ids = {}
    for name in IMAGES:
        path = corpus / "images" / name
        _draw(name).save(path, format="PNG")
        image_ids[name] = item_id("image", image_key(path))
    (corpus / "captions.json").write_text(json.dumps(IMAGES, indent=1), encoding="utf-8")
    questions = root / "questions.jsonl"
    with open(questions, "w", encoding="utf-8") as f:
        for question in _questions(image_ids):
            f.write(json.dumps(question) + "\n")
    return corpus, questions
