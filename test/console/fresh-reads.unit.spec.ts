import { freshReads } from '../../console/src/fresh-reads';

/** Lets settled reads run their callbacks and start their follow-ups. */
const nextTurn = () => new Promise((done) => setImmediate(done));

/** A read the test answers by hand, in the order it chooses. */
function reads(options: { applyThrows?: boolean } = {}) {
  const pending: Array<{ resolve(v: number): void; reject(e: unknown): void }> = [];
  const applied: number[] = [];
  const failed: unknown[] = [];
  let served = 0;
  const r = freshReads(
    () =>
      new Promise<number>((resolve, reject) => {
        pending.push({ resolve, reject });
      }),
    (v) => {
      if (options.applyThrows) throw new Error(`cannot show ${v}`);
      applied.push(v);
    },
    (e) => failed.push(e),
  );
  /** Answer the oldest read with the source's state at that moment, then let the follow-ups run. */
  const answer = async (value = ++served) => {
    pending.shift()!.resolve(value);
    await nextTurn();
  };
  const fail = async (error: unknown) => {
    pending.shift()!.reject(error);
    await nextTurn();
  };
  return { r, pending, applied, failed, answer, fail };
}

describe("the console's reads of a changing source", () => {
  it('given no read in flight, when the source changes, then it is read at once', async () => {
    const { r, pending, applied, answer } = reads();
    r.changed();
    expect(pending).toHaveLength(1);
    await answer(7);
    expect(applied).toEqual([7]);
  });

  it('given a read in flight, when the source changes many times, then one more read follows it, begun after the last change', async () => {
    const { r, pending, applied, answer } = reads();
    r.changed();
    for (let i = 0; i < 50; i++) r.changed();
    expect(pending).toHaveLength(1);
    await answer(1);
    // The first answer is shown (not dropped for being older than the changes), and one read follows.
    expect(applied).toEqual([1]);
    expect(pending).toHaveLength(1);
    await answer(2);
    expect(applied).toEqual([1, 2]);
    expect(pending).toHaveLength(0);
  });

  it('given changes that never pause, when each read returns after the next change, then every answer is applied in order (the page never freezes on the old state)', async () => {
    const { r, applied, answer } = reads();
    r.changed();
    for (let i = 1; i <= 5; i++) {
      r.changed();
      await answer(i);
    }
    expect(applied).toEqual([1, 2, 3, 4, 5]);
  });

  it('given a read that fails, when the source changed meanwhile, then the failure is reported and the source is read again', async () => {
    const { r, pending, applied, failed, fail, answer } = reads();
    r.changed();
    r.changed();
    await fail(new Error('HTTP 503'));
    expect(failed).toEqual([new Error('HTTP 503')]);
    expect(pending).toHaveLength(1);
    await answer(3);
    expect(applied).toEqual([3]);
  });

  it('given a read in flight, when stopped, then its answer is not applied and nothing more is read', async () => {
    const { r, pending, applied, answer } = reads();
    r.changed();
    r.changed();
    r.stop();
    await answer(1);
    expect(applied).toEqual([]);
    expect(pending).toHaveLength(0);
    r.changed();
    expect(pending).toHaveLength(0);
  });

  it('given a read in flight, when an action answers with a newer value, then it is shown at once, the older read is dropped, and the source is read once more', async () => {
    const { r, pending, applied, answer } = reads();
    r.changed();
    r.replace(100);
    expect(applied).toEqual([100]);
    await answer(1);
    // Begun before the action: it would show the state from before it.
    expect(applied).toEqual([100]);
    expect(pending).toHaveLength(1);
    await answer(101);
    expect(applied).toEqual([100, 101]);
  });

  it('given a load that throws at once, when read, then the failure is reported and reads go on', async () => {
    const failed: unknown[] = [];
    const applied: number[] = [];
    let calls = 0;
    const r = freshReads<number>(
      () => {
        calls += 1;
        if (calls === 1) throw new Error('no session');
        return Promise.resolve(calls);
      },
      (v) => applied.push(v),
      (e) => failed.push(e),
    );
    r.changed();
    await nextTurn();
    expect(failed).toEqual([new Error('no session')]);
    r.changed();
    await nextTurn();
    expect(applied).toEqual([2]);
  });

  it('given a page that cannot show an answer, when it arrives, then the failure is reported and the next change is still read', async () => {
    const { r, pending, failed, answer } = reads({ applyThrows: true });
    r.changed();
    await answer(1);
    expect(failed).toEqual([new Error('cannot show 1')]);
    r.changed();
    expect(pending).toHaveLength(1);
  });
});
