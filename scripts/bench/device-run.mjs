// The second of the two device calls for issue 22's GPU measurements (docs/performance.md, "Beside
// the peers, and where the time goes"); the first, device-setup.sh, installs Node and the Vulkan
// loader on a machine that lacks them:
//
//   device.run  command: sh scripts/bench/device-setup.sh   carry: ['.devbench/boot']   timeout_s: 120
//   device.run  command: PATH=/opt/hearth-node:$PATH node scripts/bench/device-run.mjs   carry: ['.devbench/pack']   timeout_s: 600
//
// It unpacks the pack that device-pack.mjs made (.devbench/pack -> .devbench/run), points Vulkan at
// the NVIDIA driver when the machine has it, and runs the bundled bench step by step, most wanted
// first (the list below says which and why). Every step has a time limit, and all of them share one
// deadline (DEVICE_BUDGET_S, default 500 s: the device tool's 10-minute command limit and 15 minutes
// of device time a session, less a machine's start, the setup call and the transfers); a step that
// would start past it is listed as not run. So the command ends in time and never hangs.
//
// Into $OUT (the device tool returns it; .devbench/out where it is unset), flat, three files:
//   device-run.md    the machine, then every step's command, outcome and tables: what
//                    docs/performance.md records, verbatim (the bench's --record is not used: steps
//                    whose tables share a title would overwrite each other)
//   device-run.json  the same, with each step's full JSON
//   device-run.log   every step's output
//
// DEVICE_STEPS=profile,gemma runs only the steps whose names contain one of the words (a second
// call, for steps a first call left unrun). DEVICE_QUICK=1 (or --quick) runs tiny settings instead, to check the whole path on SwiftShader
// without a GPU; its figures mean nothing. Plain JavaScript: the GPU machine has Node alone.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { unpack } from './device-archive.mjs';
import { browserProbe } from './device-browser.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const started = Date.now();
const quick = process.env.DEVICE_QUICK === '1' || process.argv.includes('--quick');
const budgetS = Number(process.env.DEVICE_BUDGET_S ?? (quick ? 1500 : 500));
const deadline = started + budgetS * 1000;
const out = path.resolve(process.env.OUT ?? path.join(root, '.devbench/out'));
const runDir = path.join(root, '.devbench/run');
const work = path.join(runDir, 'work');
const NVIDIA_ICD = '/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json';
const TOGGLES = 'skip_validation,disable_robustness';
const SHAPES = ['smollm2-135m', 'qwen2.5-0.5b', 'llama-3.2-1b'];
const PROFILED = 'smollm2-135m,qwen2.5-0.5b';
const DECODED = 'smollm2-135m,qwen2.5-0.5b,llama-3.2-1b';
const GEMMA = 'gemma-3-270m,gemma-3-1b';

mkdirSync(out, { recursive: true });
const logFile = createWriteStream(path.join(out, 'device-run.log'));
const say = (line) => {
  const stamped = `[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`;
  console.log(stamped);
  logFile.write(`${stamped}\n`);
};

/** Runs a command, output to the log, killed with its children (llama.cpp, Python) at `limitMs`. */
function runLimited(command, args, env, limitMs) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let timedOut = false;
    child.stdout.on('data', (d) => {
      stdout += d.toString();
      logFile.write(d);
    });
    child.stderr.on('data', (d) => logFile.write(d));
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, limitMs);
    const done = (code, error) => {
      clearTimeout(timer);
      resolve({ code, stdout, timedOut, error });
    };
    child.on('error', (e) => done(null, e.message));
    child.on('close', (code) => done(code));
  });
}

/** One line of a command's output, or why there is none. */
function probe(command, args) {
  // 40 s: python3 importing torch took longer than 15 s on the H200's first call.
  const r = spawnSync(command, args, { encoding: 'utf8', timeout: 40_000 });
  return r.status === 0 ? r.stdout.trim() : `(${command}: ${r.error?.message ?? r.stderr.trim().split('\n').pop() ?? `exit ${r.status}`})`;
}

function hasSystemVulkanLoader() {
  const ldconfig = spawnSync('ldconfig', ['-p'], { encoding: 'utf8' });
  if (ldconfig.status === 0) return ldconfig.stdout.includes('libvulkan.so.1');
  return ['/usr/lib/x86_64-linux-gnu/libvulkan.so.1', '/lib/x86_64-linux-gnu/libvulkan.so.1', '/usr/lib64/libvulkan.so.1'].some(existsSync);
}

// 1. Unpack, and the machine.
const t0 = Date.now();
const files = unpack(path.join(root, '.devbench/pack'), runDir);
say(`unpacked ${files.length} files into ${path.relative(root, runDir)} in ${Date.now() - t0} ms`);
mkdirSync(work, { recursive: true });

const env = { ...process.env };
if (!env.VK_DRIVER_FILES && !env.VK_ICD_FILENAMES && existsSync(NVIDIA_ICD)) env.VK_DRIVER_FILES = NVIDIA_ICD;
const systemLoader = hasSystemVulkanLoader();
if (!systemLoader) env.LD_LIBRARY_PATH = [path.join(runDir, 'lib'), env.LD_LIBRARY_PATH].filter(Boolean).join(':');
const machine = {
  date: new Date().toISOString(),
  gpu: probe('nvidia-smi', ['--query-gpu=name,driver_version,memory.total', '--format=csv,noheader']),
  cpu: probe('sh', ['-c', "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2; nproc"]).replace(/\s*\n/g, ', '),
  node: process.version,
  python: probe('python3', [
    '-c',
    'import torch, transformers, peft; print(torch.__version__, transformers.__version__, peft.__version__, torch.cuda.is_available())',
  ]),
  vulkanDriver: env.VK_DRIVER_FILES ?? env.VK_ICD_FILENAMES ?? '(the loader default)',
  vulkanLoader: systemLoader ? 'the machine’s' : 'the pack’s (lib/libvulkan.so.1)',
  quick,
  budgetS,
};
for (const [k, v] of Object.entries(machine)) say(`${k}: ${v}`);

// 2. The steps, most wanted first.
/** A full-size decode step at batches 1 and 8 of `models`, with the settings in `extra`. */
const decodeStep = (name, models, extra) => ({
  name,
  limitS: 90,
  args: ['--sections', 'generation', '--full', '--models', models, '--batches', '1,8', ...extra],
});
const bench = path.join(runDir, 'a/b/run.mjs');
// Paths relative to the repository root (the steps' working folder), so the recorded commands read the same on any machine.
const common = [
  '--llama-cpp-peer',
  path.relative(root, path.join(runDir, 'llama-cpp/llama-cpp-peer.mjs')),
  '--peer-dir',
  path.relative(root, path.join(work, 'peer-models')),
];
const steps = quick
  ? [
      {
        name: 'peers decode',
        limitS: 600,
        args: ['--sections', 'peers', '--peer-parts', 'decode', '--peer-shapes', 'smollm2-135m', '--peer-formats', 'q4_k_m'],
      },
      { name: 'peers training', limitS: 600, args: ['--sections', 'peers', '--peer-parts', 'training', '--peer-shapes', 'smollm2-135m'] },
      {
        name: 'profile',
        limitS: 600,
        args: [
          '--sections',
          'generation,training',
          '--profile',
          '--lora-rank',
          '16',
          '--models',
          'tiny-chat',
          '--train-models',
          'smollm2-135m',
        ],
      },
      {
        name: 'variants',
        limitS: 300,
        args: [
          '--sections',
          'generation',
          '--models',
          'tiny-chat',
          '--batches',
          '1',
          '--gemv-loads',
          '1',
          '--mlp-slice',
          '32',
          '--fused-max-batch',
          '4',
          '--gemm-tile',
          '128',
          '--decode-graph',
          'fused',
        ],
      },
      {
        name: 'Dawn toggles',
        limitS: 300,
        args: ['--sections', 'generation', '--models', 'tiny-chat', '--batches', '1', '--dawn-toggles', TOGGLES],
      },
    ].map((s) => ({ ...s, args: [...s.args, '--quick', '--layers', '1', '--prompt', '16', '--steps', '2', '--train-tokens', '16'] }))
  : // Sized from the H200 run of 2026-11-28 (docs/performance.md "An H200 beside the peers"): a peers
    // decode step took 58-81 s per shape (three GGUF files, Hearth and llama.cpp), a peers training
    // step 60-99 s, a generation step 5-15 s per model, the profile step 28 s. Most wanted first: the
    // peers' decode table, then what the changes since that run did, each beside the setting that
    // undoes it (GEMV loads in flight, the decode graph, the MLP mode at batch 1), then the training
    // table, which those changes do not touch.
    [
      // The GPU idles at a low clock (345 MHz read on an H200): the first measurements of the
      // 2026-11-28 run (SmolLM2-135M's F16 and Q8_0 files, 175 and 159 tokens/s against 274 for the
      // Q4_K_M file after them and 313 for bf16 later) look like the clock ramping up. A short
      // decode first, its table kept as the bf16 baseline.
      { name: 'warm-up', limitS: 60, args: ['--sections', 'generation', '--full', '--models', 'smollm2-135m', '--batches', '1,8'] },
      ...SHAPES.map((shape) => ({
        name: `peers decode ${shape}`,
        limitS: 150,
        args: ['--sections', 'peers', '--full', '--peer-parts', 'decode', '--peer-shapes', shape],
      })),
      // Where the time goes now, with decode under a rank-16 adapter on every projection at batches 1
      // and 8 (the RL rollout path: decode-fused-lora) and the training step.
      {
        name: 'profile',
        limitS: 150,
        args: [
          '--sections',
          'generation,training',
          '--full',
          '--profile',
          '--lora-rank',
          '16',
          '--models',
          DECODED,
          '--train-models',
          PROFILED,
        ],
      },
      // The GEMV kernels as they were (one load in flight per invocation): what gemv-config.ts LOADS is worth.
      decodeStep('one GEMV load in flight', DECODED, ['--gemv-loads', '1']),
      // The GEMV pair for the MLP at every batch (no split-K partials): whether fusedMaxBatch 4 is right.
      decodeStep('unfused MLP at batch 1', DECODED, ['--fused-max-batch', '0']),
      // DecodeMlp in slices of 32: four times the workgroups at batch 1, four times the partials to add.
      decodeStep('MLP slices of 32', DECODED, ['--mlp-slice', '32']),
      // Gemma 3: the default general graph, then the fused one (4 dispatches per layer, 5 above B = 4).
      decodeStep('gemma decode', GEMMA, ['--profile']),
      decodeStep('gemma decode fused', GEMMA, ['--profile', '--decode-graph', 'fused']),
      // Prefill and the training step on the 128 x 128 GEMM tile (8 x 8 per invocation), beside the
      // profile step's figures on the default 64 x 64.
      {
        name: 'GEMM tiles of 128',
        limitS: 90,
        args: [
          '--sections',
          'generation,training',
          '--full',
          '--models',
          PROFILED,
          '--batches',
          '1',
          '--train-models',
          PROFILED,
          '--gemm-tile',
          '128',
        ],
      },
      ...SHAPES.map((shape) => ({
        name: `peers training ${shape}`,
        limitS: 150,
        args: ['--sections', 'peers', '--full', '--peer-parts', 'training', '--peer-shapes', shape],
      })),
      // Decode again with Dawn's Node-only toggles (2026-11-28: inconsistent, one run each).
      { ...decodeStep('Dawn toggles', PROFILED, ['--dawn-toggles', TOGGLES]), limitS: 60 },
    ];

// DEVICE_STEPS=a,b keeps the steps whose names contain one of them: a second call for what a first left unrun.
const only = process.env.DEVICE_STEPS?.split(',').filter(Boolean);
const chosen = only ? steps.filter((s) => only.some((o) => s.name.includes(o))) : steps;
if (chosen.length === 0) {
  say(`DEVICE_STEPS=${process.env.DEVICE_STEPS} names no step of: ${steps.map((s) => s.name).join('; ')}`);
  process.exit(2);
}
const results = [];
for (const step of chosen) {
  const leftS = Math.max(0, (deadline - Date.now()) / 1000);
  // A step given less than a third of its limit would only be killed: leave it for the next run.
  if (leftS < Math.min(step.limitS, 60) / 3) {
    results.push({ ...step, status: `not run: ${leftS.toFixed(0)} s of the ${budgetS} s budget left` });
    say(`${step.name}: not run (${leftS.toFixed(0)} s left)`);
    continue;
  }
  const json = path.join(work, `${step.name.replace(/[^\w.-]+/g, '-')}.json`);
  const args = [bench, ...step.args, ...common, '--json', path.relative(root, json)];
  say(`${step.name}: node ${path.relative(root, bench)} ${args.slice(1).join(' ')}`);
  const s0 = Date.now();
  const r = await runLimited(process.execPath, args, env, Math.min(step.limitS, leftS) * 1000);
  const seconds = (Date.now() - s0) / 1000;
  const status = r.timedOut
    ? `killed at its limit of ${Math.min(step.limitS, leftS).toFixed(0)} s`
    : r.code === 0
      ? 'done'
      : `failed: ${r.error ?? `exit code ${r.code}`}`;
  // The bench prints its tables, then its JSON from a line that is a lone '{'.
  const tables = r.stdout.split(/(?:^|\n)\{\n/)[0].trim();
  results.push({
    ...step,
    status,
    seconds,
    tables,
    json: existsSync(json) && status === 'done' ? JSON.parse(readFileSync(json, 'utf8')) : null,
  });
  say(`${step.name}: ${status} in ${seconds.toFixed(0)} s`);
}

// 3. The browser row, and the report.
const browser = await browserProbe({ env, timeoutMs: 30_000 });
say(`in the browser: ${browser}`);
const totalS = (Date.now() - started) / 1000;
const md = [
  `# Issue 22 on the device: ${machine.gpu}`,
  '',
  ...Object.entries(machine).map(([k, v]) => `- ${k}: ${v}`),
  `- total: ${totalS.toFixed(0)} s of the ${budgetS} s budget`,
  `- in the browser: ${browser}`,
  '',
  '| step | outcome | seconds |',
  '|---|---|---|',
  ...results.map((r) => `| ${r.name} | ${r.status} | ${r.seconds?.toFixed(0) ?? '-'} |`),
  '',
  ...results.flatMap((r) => [
    `## ${r.name}`,
    '',
    `\`node .devbench/run/a/b/run.mjs ${r.args.join(' ')}\`: ${r.status}`,
    '',
    r.tables ?? '',
    '',
  ]),
].join('\n');
writeFileSync(path.join(out, 'device-run.md'), md);
writeFileSync(path.join(out, 'device-run.json'), JSON.stringify({ machine, browser, totalS, steps: results }, null, 1));
say(`wrote device-run.md, device-run.json and device-run.log to ${out}`);
logFile.end();
