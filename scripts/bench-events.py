#!/usr/bin/env python3
"""Benchmark: an EC2 spot interruption event put on EventBridge -> the
replacement's create call by `gpuform reconcile --events` (issue 26: within
5 s). Measured against moto, printed, never asserted.

    scripts/moto.sh 5576   # then, with moto's venv python (boto3):
    .venv-moto/bin/python scripts/bench-events.py [--moto URL] [--rounds N] [--bin PATH]

Each round terminates a node behind gpuform's back, notes the wall clock,
puts the warning for it (EventBridge -> SQS, moto delivers it), and reads
the reconciler's JSON log until the node's repair line: its `create_call_ms`
(wall clock when the create was called) minus the put time is the figure;
`event_to_create_ms` is the part after the message was received. The
reconciler's interval is an hour, so only the event can start the pass.
Prints each round, then the median and p95 over the rounds (20 by default).
Everything it makes (state, queue, rules, instances) is removed at the end.
"""

import argparse
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import boto3

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def percentile(values, p):
    """The p-th percentile (0-100) by linear interpolation between ranks."""
    v = sorted(values)
    k = (len(v) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moto", default=os.environ.get("GPUFORM_TEST_MOTO_URL", "http://127.0.0.1:5576"))
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--bin", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "debug", "gpuform"))
    a = ap.parse_args()
    if a.rounds < 1:
        sys.exit("bench-events: --rounds must be at least 1")
    if not os.access(a.bin, os.X_OK):
        sys.exit(f"bench-events: no gpuform binary at {a.bin}\n  hint: cargo build --bin gpuform, or pass --bin PATH")

    env = dict(os.environ)
    env.update({
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
        "GPUFORM_AWS_PLACEMENT_GROUPS": "off", "NO_COLOR": "1",
    })
    for v in ("AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        env.pop(v, None)
    kw = dict(region_name="us-east-1", endpoint_url=a.moto, aws_access_key_id="testing", aws_secret_access_key="testing")
    ec2, sqs, events = boto3.client("ec2", **kw), boto3.client("sqs", **kw), boto3.client("events", **kw)

    work = tempfile.mkdtemp(prefix="gpuform-bench-events-")
    project = f"bench-ev-{os.getpid()}"
    with open(os.path.join(work, "spec.yaml"), "w") as f:
        f.write(f"""project: {project}
endpoints:
  aws: {a.moto}
clusters:
  infer:
    cloud: aws
    region: us-east-1
    zones: [us-east-1a]
    nodes: 2
    gpu: T4
    pricing: spot
    image: amazon-linux-2023
    disk:
      root_gb: 100
      data_gb: 50
""")

    def gpuform(*args):
        r = subprocess.run([a.bin, *args], cwd=work, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"bench-events: gpuform {' '.join(args)} failed ({r.returncode}):\n{r.stderr}")
        return r.stdout

    gpuform("apply", "spec.yaml", "--auto-approve", "-q")
    made, q, rec = [], None, None
    rec_err = open(os.path.join(work, "reconcile.stderr"), "w")
    figures = []
    try:
        rules = gpuform("reconcile", "spec.yaml", "--print-event-rules")
        q = sqs.create_queue(QueueName=f"bench-{os.getpid()}")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=q, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        for line in rules.splitlines():
            prefix = "aws events put-rule --region us-east-1 --name "
            if line.startswith(prefix):
                name, pattern = line[len(prefix):].split(" --event-pattern '", 1)
                name = f"{name}-{os.getpid()}"
                events.put_rule(Name=name, EventPattern=pattern.rstrip("'"))
                made.append(name)
                events.put_targets(Rule=name, Targets=[{"Id": "gpuform", "Arn": arn}])

        rec = subprocess.Popen([a.bin, "reconcile", "spec.yaml", "--events", q, "--interval", "1h", "--log-format", "json"],
                               cwd=work, env=env, stdout=subprocess.PIPE, stderr=rec_err, text=True)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(json.loads(l)) for l in rec.stdout], daemon=True).start()
        seen = []

        def until(pred, what):
            deadline = time.time() + 120
            while time.time() < deadline:
                try:
                    v = lines.get(timeout=1)
                except queue.Empty:
                    continue
                seen.append(v)
                if pred(v):
                    return v
            for v in seen[-20:]:
                print(json.dumps(v), file=sys.stderr)
            sys.exit(f"bench-events: no {what} within 120 s (the reconciler's last log lines above; "
                     f"its stderr in {rec_err.name})")

        until(lambda v: v["event"] == "pass", "first pass")
        for r in range(a.rounds):
            node = f"cluster.infer.node[{r % 2}]"
            with open(os.path.join(work, f".gpuform/{project}.state.json")) as f:
                old = json.load(f)["resources"][node]["id"]
            ec2.terminate_instances(InstanceIds=[old])
            put_ms = time.time() * 1000
            events.put_events(Entries=[{
                "Source": "aws.ec2", "DetailType": "EC2 Spot Instance Interruption Warning",
                "Resources": [f"arn:aws:ec2:us-east-1:123456789012:instance/{old}"],
                "Detail": json.dumps({"instance-id": old, "instance-action": "terminate"}),
            }])
            v = until(lambda v: v["event"] == "repair" and v["address"] == node and "create_call_ms" in v, "repair")
            figures.append((v["create_call_ms"] - put_ms, v["event_to_create_ms"]))
            until(lambda v: v["event"] == "pass", "end of pass")
            print(f"round {r + 1}: put -> create call {figures[-1][0]:.0f} ms (receipt -> create call {figures[-1][1]} ms)")
    finally:
        if rec is not None:
            rec.send_signal(signal.SIGTERM)
            rec.wait()
        subprocess.run([a.bin, "destroy", "spec.yaml", "--auto-approve", "-q"], cwd=work, env=env, capture_output=True)
        # A rule left targeting a deleted queue makes moto fail every later PutEvents.
        for name in made:
            events.remove_targets(Rule=name, Ids=["gpuform"])
            events.delete_rule(Name=name)
        if q is not None:
            sqs.delete_queue(QueueUrl=q)
    total = [f[0] for f in figures]
    after = [f[1] for f in figures]
    print(f"event put -> replacement's create call over {len(total)} rounds: "
          f"median {statistics.median(total):.0f} ms, p95 {percentile(total, 95):.0f} ms, "
          f"min {min(total):.0f} ms, max {max(total):.0f} ms; "
          f"message receipt -> create call: median {statistics.median(after):.0f} ms, p95 {percentile(after, 95):.0f} ms "
          f"(target: within 5000 ms; binary {a.bin}; {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
