import fc from 'fast-check';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ToolUseBlock } from '../../src/team/models/model.port';
import { ScriptedModelProvider, textResponse, toolUseResponse } from '../../src/team/models/scripted.model';
import { createDefaultToolRegistry, ToolRegistry } from '../../src/team/tools/tool-registry';
import type { ToolDefinition } from '../../src/team/tools/tool.port';
import { decodeMachineBytes, isWellFormedText } from '../../src/shared/text';
import { contextFor, scratchDir } from '../team/tools/tool-test-support';

// Where machine text enters the domain: a model's answer, a tool's output (the registry), and the
// tools that read bytes (read_file, run_command). What comes out is well-formed and decodes back to
// exactly what the model said, the file held or the command printed.

const call = (name: string, input: Record<string, unknown>): ToolUseBlock => ({ type: 'tool_use', id: 'toolu_1', name, input });

describe('machine text at the boundary', () => {
  const ws = scratchDir('triad-text-tools-');
  afterAll(() => ws.remove());
  const registry = createDefaultToolRegistry();
  const ALL = ['read_file', 'list_files', 'search_files', 'write_file', 'edit_file', 'run_command'];
  const invoke = (name: string, input: Record<string, unknown>) => registry.invoke(call(name, input), 'executor', ALL, contextFor(ws.path));

  it('a model answer with NUL and lone surrogates comes back in machine text, the script untouched', async () => {
    const step = toolUseResponse('write_file', { path: 'a\u0000', content: 'x\ud800' }, { text: 'say \u0000 \udc00 ␛' });
    const model = new ScriptedModelProvider([step, textResponse('plain 😀')]);
    const request = { runId: 'r', role: 'executor' as const, model: 'm', system: '', messages: [], tools: [], maxTokens: 10 };
    const answer = await model.complete(request);
    expect(answer.content).toEqual([
      { type: 'text', text: 'say ␛u0000 ␛uDC00 ␛␛' },
      { type: 'tool_use', id: expect.any(String), name: 'write_file', input: { path: 'a␛u0000', content: 'x␛uD800' } },
    ]);
    expect((step.content[0] as { text: string }).text).toBe('say \u0000 \udc00 ␛');
    expect((await model.complete(request)).content).toEqual([{ type: 'text', text: 'plain 😀' }]);
  });

  it('a tool gets its input decoded and its output converted by the registry', async () => {
    let seen: unknown;
    const echo: ToolDefinition = {
      name: 'echo',
      description: 'echo',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      readOnly: true,
      idempotent: true,
      risk: 'low',
      execute: async (input) => {
        seen = input.text;
        return { output: `${input.text as string}\u0000`, isError: false };
      },
    };
    const own = new ToolRegistry([echo]);
    const outcome = await own.invoke(call('echo', { text: 'a␛u0000b␛␛' }), 'executor', ['echo'], contextFor(ws.path));
    expect(seen).toBe('a\u0000b␛');
    expect(outcome).toEqual({ output: 'a␛u0000b␛␛␛u0000', isError: false });
  });

  it('write_file writes the NUL the model sent; read_file keeps bytes that are not UTF-8; run_command keeps NUL and raw bytes', async () => {
    expect((await invoke('write_file', { path: 'nul.txt', content: 'x␛u0000y' })).isError).toBe(false);
    expect(readFileSync(join(ws.path, 'nul.txt'))).toEqual(Buffer.from([0x78, 0x00, 0x79]));

    writeFileSync(join(ws.path, 'latin1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a, 0xe2, 0x90, 0x9b, 0x0a]));
    expect(await invoke('read_file', { path: 'latin1.txt' })).toEqual({ output: 'caf␛xE9\n␛␛\n', isError: false });

    const printed = await invoke('run_command', { command: "printf 'a\\000b\\377\\n'" });
    expect(printed).toEqual({ output: 'a␛u0000b␛xFF\n[exit code 0]', isError: false });
  });

  it('any file that is not binary reads back, through its machine text, byte for byte', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 300 }).filter((b) => !b.includes(0)), async (bytes) => {
        writeFileSync(join(ws.path, 'any.bin'), bytes);
        const outcome = await invoke('read_file', { path: 'any.bin' });
        expect(outcome.isError).toBe(false);
        expect(isWellFormedText(outcome.output)).toBe(true);
        expect(decodeMachineBytes(outcome.output).equals(Buffer.from(bytes))).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});
