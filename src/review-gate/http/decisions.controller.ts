import { Controller, Get, Query, Res } from '@nestjs/common';
import { IsIn, IsOptional, IsString, Matches } from 'class-validator';
import type { Response } from 'express';
import { May } from '../../auth/auth.guard';
import { parseIntParam } from '../../http/int-param';
import { CONTENT_TYPES, csvHeader, csvRow, EXPORT_FORMATS, ndjsonLine, type ExportFormat } from '../decision-log/decision-export';
import { parseDecisionFilter } from '../decision-log/decision-filter';
import type { DecisionLogVerification } from '../decision-log/decision-log';
import type { SignedHead } from '../../attestation/attestation';
import { DecisionLogService } from '../decision-log/decision-log.providers';
import { DECISION_KINDS, DECISION_OUTCOMES, type DecisionLogHead } from '../decision-log/decision-record';

const DEFAULT_JSON_LIMIT = 100;
const MAX_JSON_LIMIT = 10_000;
/** An export's widest `limit` and the widest `afterSeq`: 9 and 15 digits (docs/API.md "Limits"). */
const MAX_EXPORT_LIMIT = 999_999_999;
const MAX_SEQ = 999_999_999_999_999;
/** Exports are written in chunks of about this many bytes. */
const CHUNK_BYTES = 64 * 1024;

export class ListDecisionsQueryDto {
  /** `review` or `tool_approval`. */
  @IsOptional() @IsIn(DECISION_KINDS) kind?: string;
  @IsOptional() @IsString() runId?: string;
  @IsOptional() @IsString() decider?: string;
  @IsOptional() @IsIn(DECISION_OUTCOMES) outcome?: string;
  /** ISO 8601 date or date-time with a zone, inclusive. */
  @IsOptional() @IsString() from?: string;
  @IsOptional() @IsString() to?: string;
  /** Read with parseIntParam, whose range depends on the format. */
  @IsOptional() @IsString() limit?: string;
  /** Paging: records after this seq (`nextAfterSeq` of the previous page). */
  @IsOptional() @IsString() afterSeq?: string;
  @IsOptional() @IsIn(EXPORT_FORMATS) format?: ExportFormat;
}

export class VerifyDecisionsQueryDto {
  /** A record hash, or a signed head's token (GET /v1/decisions/head). */
  @IsOptional() @IsString() @Matches(/^([0-9a-f]{64}|[A-Za-z0-9_-]{16,4096})$/, { message: 'since must be a record hash (64 lowercase hex characters) or a signed head token' }) since?: string;
}

/** The decision log for auditors: read, export, verify. */
@Controller('v1/decisions')
@May('audit')
export class DecisionsController {
  constructor(private readonly log: DecisionLogService) {}

  /**
   * The last record's `{seq, hash}`, signed now by this server (`at`, `keyId`, `sig`), and `token`,
   * the same as one line: keep it, and later prove the log still extends it (`verify?since=<token>`).
   */
  @Get('head')
  head(): Promise<DecisionLogHead & SignedHead & { token: string }> {
    return this.log.signedHead();
  }

  /** The server signing keys this store knows: which are trusted here, and since when any is revoked. */
  @Get('keys')
  async keys() {
    return { keys: await this.log.keys() };
  }

  /** `?since=<hash>`: also whether the log still extends that head (`since.extends`; unknown hash → ok false, "not found"). */
  @Get('verify')
  verify(@Query() query: VerifyDecisionsQueryDto): Promise<DecisionLogVerification> {
    return this.log.verify({ since: query.since });
  }

  /**
   * `format=json` (default): `{decisions, nextAfterSeq?}`, at most `limit` (default 100, max
   * 10,000). `ndjson` and `csv` stream every matching record (or the first `limit`).
   */
  @Get()
  async list(@Query() query: ListDecisionsQueryDto, @Res() res: Response): Promise<void> {
    const filter = parseDecisionFilter(query);
    const format = query.format ?? 'json';
    const afterSeq = parseIntParam('afterSeq', query.afterSeq, undefined, 0, MAX_SEQ);
    const limit = parseIntParam('limit', query.limit, undefined, 1, format === 'json' ? MAX_JSON_LIMIT : MAX_EXPORT_LIMIT);
    if (format === 'json') {
      const n = limit ?? DEFAULT_JSON_LIMIT;
      const decisions = await this.log.list(filter, { afterSeq, limit: n });
      const body = decisions.length === n ? { decisions, nextAfterSeq: decisions[n - 1].seq } : { decisions };
      res.status(200).json(body);
      return;
    }
    const records = await this.log.export(filter, afterSeq);
    res.status(200);
    res.setHeader('content-type', CONTENT_TYPES[format]);
    res.setHeader('content-disposition', `attachment; filename="decisions.${format}"`);
    let chunk = format === 'csv' ? csvHeader() : '';
    let written = 0;
    for await (const record of records) {
      if (limit !== undefined && written >= limit) break;
      chunk += format === 'csv' ? csvRow(record) : ndjsonLine(record);
      written++;
      if (chunk.length >= CHUNK_BYTES) {
        if (!(await write(res, chunk))) return;
        chunk = '';
      }
    }
    res.end(chunk);
  }
}

/** Writes with backpressure; false when the client went away. */
async function write(res: Response, chunk: string): Promise<boolean> {
  if (res.destroyed) return false;
  if (!res.write(chunk)) {
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.once('drain', done);
      res.once('close', done);
    });
  }
  return !res.destroyed;
}
