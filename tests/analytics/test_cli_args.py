"""`kcoord serve --journal ...` and `kcoord report ...` argument handling."""
from kcoord.cli import build_parser, config_from_args


def test_serve_journal_options_reach_the_config():
    args = build_parser().parse_args(["serve", "--listen", "127.0.0.1:0", "--data-dir", "/tmp/x",
                                      "--journal", "none", "--journal-max-bytes", "1000"])
    cfg = config_from_args(args)
    assert (cfg.data_dir, cfg.journal, cfg.journal_max_bytes) == ("/tmp/x", "none", 1000)
    cfg = config_from_args(build_parser().parse_args(["serve", "--listen", "127.0.0.1:0"]))
    assert (cfg.data_dir, cfg.journal) == (None, None)


def test_report_arguments():
    args = build_parser().parse_args(["report", "a.log", "dir", "--out", "o", "--master", "spark://h:7077",
                                      "--since", "2025-01-01T00:00:00", "--until", "2025-01-02"])
    assert (args.inputs, args.out, args.master, args.since, args.until) == (
        ["a.log", "dir"], "o", "spark://h:7077", "2025-01-01T00:00:00", "2025-01-02")
    assert build_parser().parse_args(["report", "x", "--out", "o"]).master == "local[*]"


def test_serve_journal_topic_reaches_the_config():
    cfg = config_from_args(build_parser().parse_args(["serve", "--listen", "127.0.0.1:0",
                                                      "--journal-topic", "kcoord-journal"]))
    assert cfg.journal_topic == "kcoord-journal"
    assert config_from_args(build_parser().parse_args(["serve"])).journal_topic is None


def test_report_kafka_arguments():
    args = build_parser().parse_args(["report", "--kafka", "h:9092", "--topic", "j", "--out", "o", "--follow",
                                      "--max-batches", "3", "--interval", "0.5"])
    assert (args.inputs, args.kafka, args.topic, args.follow, args.max_batches, args.interval) == (
        [], "h:9092", "j", True, 3, 0.5)


def test_report_offsets_topic_arguments():
    from kcoord.cli.main import BadInput, _check_report_args

    args = build_parser().parse_args(["report", "--kafka", "h:9092", "--offsets-topic", "--out", "o"])
    assert (args.kafka, args.topic, args.offsets_topic) == ("h:9092", None, True)
    for argv, says in ((["--offsets-topic"], "--offsets-topic needs --kafka"),
                       (["--kafka", "h:9092"], "needs --topic NAME or --offsets-topic"),
                       (["--kafka", "h:9092", "--offsets-topic", "--follow"], "is read once"),
                       (["--kafka", "h:9092", "--topic", "__consumer_offsets", "--follow"], "is read once")):
        try:
            _check_report_args(build_parser().parse_args(["report", *argv, "--out", "o"]))
        except BadInput as err:
            assert says in str(err), (argv, err)
        else:
            raise AssertionError(f"{argv} was accepted")
