// The one command to give the device tool for issue 22's GPU measurements (docs/performance.md,
// "Beside the peers, and where the time goes"):
//
//   device.run  command: node scripts/bench/device-run.mjs   carry: ['.devbench/pack']   timeout_s: 600
//
// It unpacks the pack that device-pack.mjs made (.devbench/pack -> .devbench/run), points Vulkan at
// the NVIDIA driver when the machine has it, and runs the bundled bench step by step, most wanted
// first: the peers' decode table per shape, the peers' training table per shape, the generation and
// training sections with --profile (and decode under a rank-16 LoRA adapter, --lora-rank 16), decode
// again with Dawn's Node-only toggles, Gemma 3's fused decode with --profile and batch 8 on the fused
// MLP (if time is left), and a probe of whether a headless Chromium there reaches the GPU. Every step has a time limit, and all of them
// share one deadline (DEVICE_BUDGET_S, default 420 s: the device tool's 10-minute command limit and
// 15 minutes of device time a session, less a machine's start and the transfers); a step that
// would start past it is listed as not run. So the command ends in time (about 7.5 minutes at most,
// the browser probe's 30 s included) and never hangs.
//
// Into $OUT (the device tool returns it; .devbench/out where it is unset), flat, four files:
//   device-run.md    the machine, then every step's tables and its outcome
//   device-run.json  the same, with each step's full JSON
//   device-run.log   every step's output
//   performance.md   docs/performance.md with the steps' tables recorded (`--record`), to copy over
//
// DEVICE_STEPS=profile,toggles runs only the steps whose names contain one of the words (a second
// call, for steps a first call left unrun). DEVICE_QUICK=1 (or --quick) runs tiny settings instead, to check the whole path on SwiftShader
// without a GPU; its figures mean nothing. Plain JavaScript: the GPU machine has Node alone.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { unpack } from './device-archive.mjs';
import { browserProbe } from './device-browser.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const started = Date.now();
const quick = process.env.DEVICE_QUICK === '1' || process.argv.includes('--quick');
const budgetS = Number(process.env.DEVICE_BUDGET_S ?? (quick ? 1500 : 420));
const deadline = started + budgetS * 1000;
const out = path.resolve(process.env.OUT ?? path.join(root, '.devbench/out'));
const runDir = path.join(root, '.devbench/run');
const work = path.join(runDir, 'work');
const NVIDIA_ICD = '/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json';
const TOGGLES = 'skip_validation,disable_robustness';
const SHAPES = ['smollm2-135m', 'qwen2.5-0.5b', 'llama-3.2-1b'];
const PROFILED = 'smollm2-135m,qwen2.5-0.5b';

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
  const r = spawnSync(command, args, { encoding: 'utf8', timeout: 15_000 });
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
mkdirSync(path.join(runDir, 'docs'), { recursive: true });
const recorded = path.join(runDir, 'docs/performance.md');
copyFileSync(path.join(root, 'docs/performance.md'), recorded);
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
const bench = path.join(runDir, 'a/b/run.mjs');
// Paths relative to the repository root (the steps' working folder), so the recorded commands read the same on any machine.
const common = [
  '--llama-cpp-peer',
  path.relative(root, path.join(runDir, 'llama-cpp/llama-cpp-peer.mjs')),
  '--peer-dir',
  path.relative(root, path.join(work, 'peer-models')),
  '--record',
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
        name: 'Dawn toggles',
        limitS: 300,
        args: ['--sections', 'generation', '--models', 'tiny-chat', '--batches', '1', '--dawn-toggles', TOGGLES],
      },
    ].map((s) => ({ ...s, args: [...s.args, '--quick', '--layers', '1', '--prompt', '16', '--steps', '2', '--train-tokens', '16'] }))
  : // Sized from the H100 runs (docs/performance.md): a decode or prefill measurement takes well under a
    // second there, so a file costs its load, Hearth's pipeline compilation and llama.cpp's process
    // and shader start, about 10-20 s (9 files: 1.5-3 min); a shape's training step pair is 4+4 Hearth
    // steps of 0.4-3 s plus two Python processes that import torch (2-3 min for three shapes); the
    // profile and toggle steps about 1.5 min. 5-7.5 min in all; the deadline cuts the tail if not.
    [
      ...SHAPES.map((shape) => ({
        name: `peers decode ${shape}`,
        limitS: 150,
        args: ['--sections', 'peers', '--full', '--peer-parts', 'decode', '--peer-shapes', shape],
      })),
      ...SHAPES.map((shape) => ({
        name: `peers training ${shape}`,
        limitS: 150,
        args: ['--sections', 'peers', '--full', '--peer-parts', 'training', '--peer-shapes', shape],
      })),
      // With decode under a rank-16 adapter on every projection at batches 1 and 8 (the RL rollout
      // path: decode-fused-lora), in the same engines: about 10-20 s more (the adapters' compilation).
      {
        name: 'profile',
        limitS: 180,
        args: [
          '--sections',
          'generation,training',
          '--full',
          '--profile',
          '--lora-rank',
          '16',
          '--models',
          PROFILED,
          '--train-models',
          PROFILED,
        ],
      },
      // Decode again with Dawn's toggles: beside the profile step's decode figures (taken without them).
      {
        name: 'Dawn toggles',
        limitS: 90,
        args: ['--sections', 'generation', '--full', '--models', PROFILED, '--batches', '1,8', '--dawn-toggles', TOGGLES],
      },
      // Gemma 3 on the fused decode path (4 dispatches per layer at B <= 4, 5 folded above), against the
      // H100's 315 / 183 tokens/s through the general graph; last, as time allows (or DEVICE_STEPS=gemma).
      {
        name: 'gemma decode',
        limitS: 150,
        args: ['--sections', 'generation', '--full', '--profile', '--models', 'gemma-3-270m,gemma-3-1b', '--batches', '1,8'],
      },
      // Batch 8 with the fused MLP (default: the unfused GEMV pair, for Gemma the folded one): whether
      // fusedMaxBatch 4 is right, for a Llama-like shape and for Gemma.
      {
        name: 'gemma and qwen fused at batch 8',
        limitS: 120,
        args: [
          '--sections',
          'generation',
          '--full',
          '--models',
          'qwen2.5-0.5b,gemma-3-270m,gemma-3-1b',
          '--batches',
          '8',
          '--fused-max-batch',
          '8',
        ],
      },
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
copyFileSync(recorded, path.join(out, 'performance.md'));
say(`wrote device-run.md, device-run.json, device-run.log and performance.md to ${out}`);
logFile.end();
