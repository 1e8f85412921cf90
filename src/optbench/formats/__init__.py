"""The harness's file formats: one module per file, the writer, the schema and the reader of that file.

fields.py          the field checks every parser shares: one line naming the file, the field and the fix

run_record.py      record.json: resolved config, identity and run id, written once
run_summary.py     summary.json: status, epochs, final and best metrics, provenance; the run statuses
metrics_log.py     metrics.jsonl: one object per epoch
run_files.py       a run directory's record, summary and metrics read together (compare, replay)
predictions.py     predictions.npz: per-image test predictions at the selected epoch
decision_record.py sequential-<study>.json: the looks of a study run until decided
tuning_record.py   tuning-<study>.json: what a tuning study tried, cost and chose
study_estimate.py  estimate-<study>.json: the time each launch of a study predicted before it trained
aggregate_tables.py the aggregator's tables code reads back (results, verdicts, fidelity): paths, columns
rate_cache.py      the device-rate caches (fastest-device.json, estimate-rates.json), versioned
label_file.py      CIFAR-N's <dataset>_human.pt: the human label arrays, read without running pickled code
"""
