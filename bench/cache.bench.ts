import type { ModelCallCompletedData } from '../src/team/domain/run-events';
import { runStatus } from '../src/team/domain/run-state';
import { AnthropicModelProvider } from '../src/team/models/anthropic.provider';
import { CACHE_READ_MULTIPLIER, CACHE_WRITE_5M_MULTIPLIER, priceOf } from '../src/team/domain/pricing';
import { startFakeMessagesApi, type FakeStep, type RecordedRequest } from '../test/support/fake-messages-api';
import { dataOf, startRun } from '../test/team/driver/driver-support';
import { cpuProbeText, machineInfo, type MachineInfo } from './machine';

/**
 * Prompt caching (`npm run bench -- cache`): a recorded 30-turn executor phase (29 tool turns, each
 * writing a ~1.5 KB file, then submit_work) through the real SDK against the loopback Messages API,
 * which bills `cache_control` breakpoints as the API does (a breakpoint writes its prefix; a later
 * request reads the longest cached prefix). Run twice: with the provider's breakpoints and without.
 * Reports the executor's billed input tokens (full-rate, cache writes, cache reads) and their cost at
 * the model's price (writes 1.25x, reads 0.1x). Target: input cost at least 4x lower with caching.
 */

const API_KEY = 'sk-ant-bench-cache';
const MODEL = 'claude-sonnet-4-6';
export const CACHE_BENCH_TURNS = 30;

export interface CacheSide {
  executorCalls: number;
  inputTokens: number;
  cacheWriteTokens: number;
  cacheReadTokens: number;
  /** Every input token the executor's calls sent, however billed. */
  promptTokens: number;
  inputCostUsd: number;
}

export interface CacheBenchResult {
  benchmark: 'cache';
  machine: MachineInfo;
  model: string;
  turns: number;
  withCache: CacheSide;
  withoutCache: CacheSide;
  /** Input cost without caching ÷ with caching. */
  inputCostRatio: number;
}

/** The recorded executor: turn n (1-based) writes file n until the last turn, which submits. */
function recorded(turns: number): (r: RecordedRequest) => FakeStep {
  return (r) => {
    const system = JSON.stringify(r.body?.system ?? '');
    if (system.includes('You are the Architect')) return { kind: 'response', content: [{ type: 'tool_use', name: 'submit_plan', input: { plan: 'write the module files' } }] };
    if (system.includes('You are the Reviewer')) {
      return { kind: 'response', content: [{ type: 'tool_use', name: 'submit_verdict', input: { verdict: 'APPROVE', findings: [], summary: 'ok' } }] };
    }
    const turn = ((r.body!.messages as unknown[]).length + 1) >> 1;
    if (turn >= turns) return { kind: 'response', content: [{ type: 'tool_use', name: 'submit_work', input: { summary: `wrote ${turns - 1} files` } }] };
    const content = Array.from({ length: 30 }, (_, i) => `export const value${turn}_${i} = ${turn * 100 + i}; // line ${i}`).join('\n');
    return { kind: 'response', content: [{ type: 'text', text: `Writing module ${turn}.` }, { type: 'tool_use', name: 'write_file', input: { path: `src/m${turn}.ts`, content } }] };
  };
}

async function side(promptCaching: boolean, turns: number): Promise<CacheSide> {
  const api = await startFakeMessagesApi({ apiKey: API_KEY, promptCache: true, fallback: recorded(turns) });
  const team = { architect: { model: MODEL }, executor: { model: MODEL, maxTurns: turns }, reviewer: { model: MODEL } };
  const h = await startRun({
    model: new AnthropicModelProvider({ apiKey: API_KEY, baseURL: api.url, promptCaching }),
    launch: { team, reviewPolicy: { humanGate: false } },
  });
  try {
    const state = await h.driver.drive();
    if (runStatus(state) !== 'completed') throw new Error(`the benchmark run ended ${runStatus(state)}`);
    const calls = dataOf<ModelCallCompletedData>(await h.events(), 'ModelCallCompleted').filter((c) => c.role === 'executor');
    const price = priceOf(MODEL)!;
    const out: CacheSide = { executorCalls: calls.length, inputTokens: 0, cacheWriteTokens: 0, cacheReadTokens: 0, promptTokens: 0, inputCostUsd: 0 };
    for (const c of calls) {
      out.inputTokens += c.usage.inputTokens;
      out.cacheWriteTokens += c.usage.cacheWriteTokens ?? 0;
      out.cacheReadTokens += c.usage.cacheReadTokens ?? 0;
    }
    out.promptTokens = out.inputTokens + out.cacheWriteTokens + out.cacheReadTokens;
    const micros = out.inputTokens * price.input + out.cacheWriteTokens * price.cacheWrite + out.cacheReadTokens * price.cacheRead;
    out.inputCostUsd = Math.round(micros) / 1e6;
    return out;
  } finally {
    h.remove();
    await api.stop();
  }
}

export async function runCacheBench(options: { turns?: number; log: (line: string) => void }): Promise<CacheBenchResult> {
  const turns = options.turns ?? CACHE_BENCH_TURNS;
  const machine = machineInfo();
  options.log(`cache: ${turns}-turn executor phase on ${MODEL} (cache writes ${CACHE_WRITE_5M_MULTIPLIER}x, reads ${CACHE_READ_MULTIPLIER}x input), loopback Messages API; ${cpuProbeText(machine)}`);
  const withCache = await side(true, turns);
  const withoutCache = await side(false, turns);
  const inputCostRatio = Math.round((withoutCache.inputCostUsd / withCache.inputCostUsd) * 100) / 100;
  for (const [name, s] of [
    ['with caching', withCache],
    ['without caching', withoutCache],
  ] as const) {
    options.log(
      `  ${name.padEnd(16)} ${s.executorCalls} calls, prompt ${s.promptTokens} tokens = ${s.inputTokens} input + ${s.cacheWriteTokens} cache write + ${s.cacheReadTokens} cache read; input cost $${s.inputCostUsd.toFixed(6)}`,
    );
  }
  options.log(`  input cost ${inputCostRatio}x lower with caching (target >= 4x)`);
  return { benchmark: 'cache', machine, model: MODEL, turns, withCache, withoutCache, inputCostRatio };
}
