"""Codec speed, side by side: kcoord's `wire` vs kafka-python 3's generated codec vs kio.

    .venv/bin/python bench/codec.py [--quick] [--json]

Prints µs per encode and per decode for four messages. `wire` and kafka-python
are timed on whole frames (header + body); kio on bodies only (it has no
request-frame API), and its decoder is native code — shown for reference.
Target: wire no slower than 2x kafka-python on any message.
"""
from __future__ import annotations

import argparse
import io
import json
import sys
import timeit
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo's tests/ helpers

from wire import codec
from wire.records import build_batch

CORRELATION = {"correlation_id": 7, "client_id": "bench"}


def messages():
    one_mib = b"".join(build_batch([(b"key-%d" % i, b"x" * 1000) for i in range(j, j + 100)])
                       for j in range(0, 1000, 100))
    one_mib = (one_mib * 2)[: 1 << 20] if len(one_mib) < 1 << 20 else one_mib
    return [
        ("Heartbeat v4 request", 12, 4, "request",
         {"group_id": "bench-group", "generation_id": 42, "member_id": "consumer-1-" + "a" * 36,
          "group_instance_id": None}),
        ("JoinGroup v9 request (1 KiB metadata)", 11, 9, "request",
         {"group_id": "bench-group", "session_timeout_ms": 45000, "rebalance_timeout_ms": 300000,
          "member_id": "consumer-1-" + "a" * 36, "group_instance_id": None, "protocol_type": "consumer",
          "protocols": [{"name": "range", "metadata": b"m" * 1024}], "reason": None}),
        ("OffsetCommit v9 request (1x50 partitions)", 8, 9, "request",
         {"group_id": "bench-group", "generation_id_or_member_epoch": 42, "member_id": "consumer-1",
          "group_instance_id": None,
          "topics": [{"name": "bench-topic", "partitions": [
              {"partition_index": i, "committed_offset": 1000 + i, "committed_leader_epoch": 3,
               "committed_metadata": ""} for i in range(50)]}]}),
        ("Fetch v16 response (1 MiB records)", 1, 16, "response",
         {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
             {"topic_id": uuid.UUID(int=12345), "partitions": [
                 {"partition_index": 0, "error_code": 0, "high_watermark": 1000, "last_stable_offset": 1000,
                  "log_start_offset": 0, "aborted_transactions": None, "preferred_read_replica": -1,
                  "records": one_mib}]}]}),
    ]


def _time(fn, quick):
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    if quick:
        number = max(1, number // 10)
    return min(timer.repeat(repeat=2 if quick else 5, number=number)) / number * 1e6


def bench_wire(k, v, kind, value, quick):
    if kind == "request":
        frame = codec.encode_request(k, v, CORRELATION, value)
        return frame, _time(lambda: codec.encode_request(k, v, CORRELATION, value), quick), \
            _time(lambda: codec.decode_request(frame), quick)
    frame = codec.encode_response(k, v, CORRELATION, value)
    return frame, _time(lambda: codec.encode_response(k, v, CORRELATION, value), quick), \
        _time(lambda: codec.decode_response(k, v, frame), quick)


def bench_kafka_python(k, v, kind, frame, quick):
    from tests.unit.wire.test_differential_kafka_python import CLASSES

    cls = CLASSES[(k, kind)]
    obj = cls.decode(frame, version=v, header=True)
    assert obj.encode(header=True) == frame
    return _time(lambda: obj.encode(header=True), quick), \
        _time(lambda: cls.decode(frame, version=v, header=True), quick)


def bench_kio(k, v, kind, frame, quick):
    from kio.index import load_request_schema, load_response_schema
    from kio.serial import entity_reader, entity_writer

    schema = (load_request_schema if kind == "request" else load_response_schema)(k, v)
    hv = codec.request_header_version(k, v) if kind == "request" else codec.response_header_version(k, v)
    header_len = len(frame) - len(codec.message(k, v, kind).encode(
        codec.decode_request(frame).body if kind == "request" else codec.decode_response(k, v, frame)[1]))
    body = frame[header_len:]
    reader, writer = entity_reader(schema), entity_writer(schema)
    obj, _ = reader(body, 0)

    def enc():
        out = io.BytesIO()
        writer(out, obj)
        return out.getvalue()

    assert enc() == body, f"kio re-encodes differently (header v{hv})"
    return _time(enc, quick), _time(lambda: reader(body, 0), quick)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for name, k, v, kind, value in messages():
        frame, we, wd = bench_wire(k, v, kind, value, args.quick)
        row = {"message": name, "bytes": len(frame), "wire": {"encode_us": we, "decode_us": wd}}
        try:
            ke, kd = bench_kafka_python(k, v, kind, frame, args.quick)
            row["kafka-python"] = {"encode_us": ke, "decode_us": kd}
            row["ratio_vs_kafka_python"] = {"encode": we / ke, "decode": wd / kd}
        except Exception as exc:  # reported, never hidden
            row["kafka-python"] = {"error": repr(exc)}
        try:
            ie, idd = bench_kio(k, v, kind, frame, args.quick)
            row["kio (bodies; native decoder)"] = {"encode_us": ie, "decode_us": idd}
        except Exception as exc:
            row["kio (bodies; native decoder)"] = {"error": repr(exc)}
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'message':42} {'bytes':>8} | {'wire enc':>9} {'dec':>9} | {'kafka-py enc':>12} {'dec':>9} | "
          f"{'ratio enc':>9} {'dec':>6} | {'kio enc':>9} {'dec*':>9}")
    for r in rows:
        kp = r["kafka-python"]
        ki = r["kio (bodies; native decoder)"]
        ratio = r.get("ratio_vs_kafka_python", {})
        flag = " <-- over 2x" if any(x > 2.0 for x in ratio.values()) else ""
        print(f"{r['message']:42} {r['bytes']:>8} | {r['wire']['encode_us']:>9.2f} {r['wire']['decode_us']:>9.2f} | "
              f"{kp.get('encode_us', float('nan')):>12.2f} {kp.get('decode_us', float('nan')):>9.2f} | "
              f"{ratio.get('encode', float('nan')):>9.2f} {ratio.get('decode', float('nan')):>6.2f} | "
              f"{ki.get('encode_us', float('nan')):>9.2f} {ki.get('decode_us', float('nan')):>9.2f}{flag}")
    print("µs per operation (best of repeats). wire/kafka-python: whole frames; kio: bodies, *native decoder.")


if __name__ == "__main__":
    main()
