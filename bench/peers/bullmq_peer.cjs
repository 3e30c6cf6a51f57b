// BullMQ (Node) for the peers' bench: the Python side (bench/peers/bullmq_peer.py) runs this file with node, from a
// throwaway folder that has `npm install bullmq ioredis` (NODE_PATH points at its node_modules).
//
//   node bullmq_peer.cjs prefill <kind> <n>     add n jobs of that work kind (addBulk, 1,000 per call)
//   node bullmq_peer.cjs enqueue <n>            add n no-op jobs one by one, each awaited; prints {"seconds": ...}
//   node bullmq_peer.cjs worker <concurrency>   ONE Worker with that concurrency, until SIGTERM
//   node bullmq_peer.cjs life <n> <batch>       add one no-op job (warm-up), print "ready", wait for a line on stdin,
//                                               then add n no-op jobs, one by one (batch 1: Queue.add) or batch at a
//                                               time (Queue.addBulk), each call awaited; prints {"seconds": ...}
//
// Jobs are removed when they complete (removeOnComplete), as taskq deletes a finished task. The handler bodies are
// bench/work.py's in JavaScript: noop; incr (one INCR on one module-level ioredis client); sleep (10 ms); cpu (the
// same loop of 100,000 rounds, which V8 runs far faster than CPython: W4 figures do not compare across runtimes).
"use strict";
const { Queue, Worker } = require("bullmq");
const IORedis = require("ioredis");

const QUEUE = "bench";
const COUNTER = "bench:work:incr";
const url = new URL(process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379/4");
const connection = {
  host: url.hostname,
  port: Number(url.port || 6379),
  db: Number(url.pathname.replace("/", "") || 0),
  maxRetriesPerRequest: null,
};
const JOB = { removeOnComplete: true, removeOnFail: 1000 };

let client = null;
function burn() {
  let total = 0;
  for (let i = 0; i < 100000; i++) total += (i * i) % 7;
  return total;
}

async function run(kind) {
  if (kind === "incr") {
    if (client === null) client = new IORedis(connection);
    await client.incr(COUNTER);
  } else if (kind === "sleep") {
    await new Promise((resolve) => setTimeout(resolve, 10));
  } else if (kind === "cpu") {
    burn();
  } else if (kind !== "noop") {
    throw new Error(`unknown work kind ${kind}`);
  }
}

// The producer's side of bench/redis_life.py: connected and warmed up before the caller starts counting Redis's time,
// so that only the adds themselves (and the worker's handling of them) fall inside its count.
async function life(queue, n, batch) {
  await queue.add("noop", { kind: "noop" }, JOB);
  process.stdout.write("ready\n");
  await new Promise((resolve) => process.stdin.once("data", resolve));
  const t0 = process.hrtime.bigint();
  for (let done = 0; done < n; done += batch) {
    const size = Math.min(batch, n - done);
    if (batch === 1) await queue.add("noop", { kind: "noop" }, JOB);
    else await queue.addBulk(Array.from({ length: size }, () => ({ name: "noop", data: { kind: "noop" }, opts: JOB })));
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  process.stdout.write(JSON.stringify({ seconds }) + "\n");
}

async function main() {
  const [command, arg1, arg2] = process.argv.slice(2);
  if (command === "worker") {
    const worker = new Worker(QUEUE, (job) => run(job.data.kind), {
      connection,
      concurrency: Number(arg1),
    });
    const stop = async () => {
      await worker.close();
      if (client !== null) client.disconnect();
      process.exit(0);
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
    return;
  }
  const queue = new Queue(QUEUE, { connection });
  if (command === "prefill") {
    const n = Number(arg2);
    for (let done = 0; done < n; done += 1000) {
      const size = Math.min(1000, n - done);
      await queue.addBulk(Array.from({ length: size }, () => ({ name: "work", data: { kind: arg1 }, opts: JOB })));
    }
  } else if (command === "enqueue") {
    const n = Number(arg1);
    for (let i = 0; i < 500; i++) await queue.add("noop", { kind: "noop" }, JOB); // warm-up, not timed
    await queue.obliterate({ force: true });
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await queue.add("noop", { kind: "noop" }, JOB);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    process.stdout.write(JSON.stringify({ seconds }) + "\n");
  } else if (command === "life") {
    await life(queue, Number(arg1), Number(arg2));
  } else {
    throw new Error(`unknown command ${command}`);
  }
  await queue.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
