"""The scale-out path: the knowledge base on a real Chroma server (``chroma run``) on loopback."""

import sys
from pathlib import Path

from hopgraph.memory.kb import Item, KnowledgeBase

CHROMA = Path(sys.executable).parent / "chroma"


def test_two_clients_share_one_server(chroma_server, tmp_path):
    writer = KnowledgeBase(tmp_path / "a", chroma_url=chroma_server)
    writer.add(
        [
            Item("text", "x", "Harrowgate is a walled city.", title="Harrowgate"),
            Item("text", "y", "Bread is baked.", title="Bread"),
        ]
    )
    reader = KnowledgeBase(tmp_path / "b", chroma_url=chroma_server)  # another worker
    assert reader.counts()["text"] == 2
    assert reader.search("walled city", k=1)[0]["title"] == "Harrowgate"
    assert writer.add([Item("text", "x", "Harrowgate is a walled city.")]).added == 0
