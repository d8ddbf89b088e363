/** Approval ids name their run and tool use: `apr_<runId>.<toolUseId>`. */
export function approvalIdOf(runId: string, toolUseId: string): string {
  return `apr_${runId}.${toolUseId}`;
}

export function parseApprovalId(approvalId: string): { runId: string; toolUseId: string } | undefined {
  const m = /^apr_([A-Za-z0-9_-]{1,128})\.([A-Za-z0-9_-]{1,128})$/.exec(approvalId);
  return m ? { runId: m[1], toolUseId: m[2] } : undefined;
}
