"""Several real processes writing at once: every item lands, nobody sees "database is locked"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.retrieval import retrieve_relevant_knowledge
from dsh_knowledge.store import KnowledgeStore

WRITER = """
import sys
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore

path, writer, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.stdin.readline()  # start together: every writer waits for the go signal
store = KnowledgeStore(path)
repository = KnowledgeRepository(store)
for n in range(count):
    repository.create(
        type="fact",
        content=f"writer {writer} item {n} concurrent insert",
        scope={"workspace": "/w"},
        evidence=[{"type": "session", "source": f"w{writer}", "timestamp": "2025-01-01T00:00:00Z"}],
    )
store.close()
print("done")
"""

WRITERS = 4
ITEMS_PER_WRITER = 1000


def test_four_processes_adding_a_thousand_items_each_all_land(tmp_path: Path) -> None:
    path = tmp_path / "shared" / "knowledge.sqlite"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(n), str(ITEMS_PER_WRITER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(WRITERS)
    ]
    outputs = [process.communicate("go\n", timeout=240) for process in processes]
    for process, (stdout, stderr) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, stderr
        assert "locked" not in stderr
        assert stdout.strip() == "done"
    with KnowledgeStore(path) as store:
        db = store.connection
        assert db.execute("SELECT count(*) FROM knowledge").fetchone()[0] == 4000
        assert db.execute("SELECT count(*) FROM knowledge_evidence").fetchone()[0] == 4000
        assert db.execute("SELECT count(*) FROM knowledge_search_doc").fetchone()[0] == 4000
        results = retrieve_relevant_knowledge(
            KnowledgeRepository(store), "writer 3 item 999", workspace="/w", limit=1
        )
        assert results[0]["knowledge"]["content"] == "writer 3 item 999 concurrent insert"
