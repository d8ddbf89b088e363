import type { RoleName } from '../models/model.port';

/**
 * Role prompts and the task messages each role receives. The text is part of the recorded
 * conversation, and the offline model reads the headings below, so the format is a contract:
 * change it only together with `parseTaskMessage`.
 */

export const ROLE_PROMPTS: Record<RoleName, string> = {
  architect:
    'You are the Architect of a three-agent team. Read the goal and the acceptance criteria, inspect the workspace with the read-only tools, and submit a concrete, numbered plan with submit_plan. You cannot modify files.',
  executor:
    'You are the Executor of a three-agent team. Carry out the plan in the workspace with your tools. Address every finding you are given. When the work is done, call submit_work with a summary and the files you changed.',
  reviewer:
    'You are the Reviewer of a three-agent team. Check every acceptance criterion against the workspace with the read-only tools. Call submit_verdict with APPROVE when all are met, REQUEST_CHANGES with one finding per unmet criterion, or BLOCK when the goal cannot be reached. You cannot modify files.',
};

export interface TaskMessageInput {
  goal: string;
  acceptanceCriteria: string[];
  iteration: number;
  plan?: string;
  workSummary?: string;
  findings?: string[];
  /** A human reviewer's reason for rejecting approved work. */
  humanFeedback?: string;
}

const H_GOAL = 'Goal:';
const H_CRITERIA = 'Acceptance criteria:';
const H_ITERATION = 'Iteration:';
const H_PLAN = 'Plan:';
const H_WORK = 'Work submitted:';
const H_FINDINGS = 'Findings to address:';
const H_FEEDBACK = 'Human reviewer feedback:';

export function renderTaskMessage(role: RoleName, input: TaskMessageInput): string {
  const parts = [`${H_GOAL}\n${input.goal}`, `${H_CRITERIA}\n${input.acceptanceCriteria.map((c) => `- ${c}`).join('\n')}`];
  parts.push(`${H_ITERATION} ${input.iteration}`);
  if (input.plan !== undefined) parts.push(`${H_PLAN}\n${input.plan}`);
  if (role === 'reviewer' && input.workSummary !== undefined) parts.push(`${H_WORK}\n${input.workSummary}`);
  if (input.findings && input.findings.length > 0) parts.push(`${H_FINDINGS}\n${input.findings.map((f) => `- ${f}`).join('\n')}`);
  if (input.humanFeedback) parts.push(`${H_FEEDBACK}\n${input.humanFeedback}`);
  const ask: Record<RoleName, string> = {
    architect: 'Plan the work, then call submit_plan.',
    executor: 'Do the work, then call submit_work.',
    reviewer: 'Review the work against every criterion, then call submit_verdict.',
  };
  parts.push(ask[role]);
  return parts.join('\n\n');
}

/** Reads a task message back (the offline model plays the roles from it). */
export function parseTaskMessage(text: string): TaskMessageInput {
  const section = (heading: string): string | undefined => {
    const start = text.indexOf(`${heading}\n`);
    if (start < 0) return undefined;
    const rest = text.slice(start + heading.length + 1);
    const end = rest.search(/\n\n(Goal:|Acceptance criteria:|Iteration:|Plan:|Work submitted:|Findings to address:|Human reviewer feedback:|Plan the work|Do the work|Review the work)/);
    return (end < 0 ? rest : rest.slice(0, end)).trim();
  };
  const bullets = (s: string | undefined) => (s ? s.split('\n').filter((l) => l.startsWith('- ')).map((l) => l.slice(2)) : []);
  const iterationMatch = /Iteration: (\d+)/.exec(text);
  return {
    goal: section(H_GOAL) ?? '',
    acceptanceCriteria: bullets(section(H_CRITERIA)),
    iteration: iterationMatch ? Number(iterationMatch[1]) : 1,
    plan: section(H_PLAN),
    workSummary: section(H_WORK),
    findings: bullets(section(H_FINDINGS)),
    humanFeedback: section(H_FEEDBACK),
  };
}
