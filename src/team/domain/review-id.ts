/** Review ids name their run and iteration: `rev_<runId>_<iteration>`. */
export function reviewIdOf(runId: string, iteration: number): string {
  return `rev_${runId}_${iteration}`;
}

export function parseReviewId(reviewId: string): { runId: string; iteration: number } | undefined {
  const m = /^rev_([A-Za-z0-9_-]{1,128})_(\d{1,6})$/.exec(reviewId);
  return m ? { runId: m[1], iteration: Number(m[2]) } : undefined;
}
