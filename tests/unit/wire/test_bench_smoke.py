"""bench/codec.py runs and reports every message for every codec (figures are not asserted)."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_codec_bench_runs():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "codec.py"), "--quick", "--json"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    rows = json.loads(out)
    assert len(rows) == 4
    for row in rows:
        for codec_name in ("wire", "kafka-python", "kio (bodies; native decoder)"):
            assert "encode_us" in row[codec_name], (row["message"], codec_name, row[codec_name])
