import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { LOOP_STRATEGIES, type LoopStrategy } from '../domain/run-events';
import { VISIBLE_TEXT } from '../../shared/text';

/**
 * Request bodies of the runs routes. Every string, array and number has an upper bound (listed in
 * docs/API.md, "Limits"); the body as a whole is bounded before these run (src/http/body-limits.ts).
 */
export class ThinkingDto {
  /** Anthropic's minimum thinking budget is 1,024 tokens. */
  @IsInt() @Min(1024) @Max(1_000_000) budgetTokens!: number;
}

/** A role's loop strategy (src/team/domain/loop-strategy.ts); numbers left out take the defaults. */
export class LoopConfigDto {
  @IsIn([...LOOP_STRATEGIES]) strategy!: LoopStrategy;
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(200) plannerModel?: string;
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(200) executorModel?: string;
  @IsOptional() @IsInt() @Min(0) @Max(10) maxReplans?: number;
  @IsOptional() @IsInt() @Min(1) @Max(20) maxPlanSteps?: number;
  @IsOptional() @IsInt() @Min(1) @Max(100) maxTurnsPerStep?: number;
}

/** The providers a role may name (`team.<role>.provider`); the launch refuses one its server is not set up for. */
export const ROLE_PROVIDERS = ['anthropic', 'openai', 'offline'] as const;

export class RoleConfigDto {
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(200) model?: string;
  /** Where the role's calls go (absent: the server's default provider): `openai` is any Chat Completions server (OPENAI_BASE_URL). */
  @IsOptional() @IsIn([...ROLE_PROVIDERS]) provider?: (typeof ROLE_PROVIDERS)[number];
  @IsOptional() @IsInt() @Min(1) @Max(1000) maxTurns?: number;
  @IsOptional() @IsArray() @ArrayMaxSize(50) @IsString({ each: true }) @IsNotEmpty({ each: true }) @MaxLength(200, { each: true }) tools?: string[];
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(20_000) systemPrompt?: string;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => ThinkingDto) thinking?: ThinkingDto;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => LoopConfigDto) loop?: LoopConfigDto;
  /** Hosts the role's commands may reach through the sandbox's proxy (`registry.npmjs.org`, `*.github.com`, `127.0.0.1:8080`). */
  @IsOptional() @IsArray() @ArrayMaxSize(50) @IsString({ each: true }) @IsNotEmpty({ each: true }) @MaxLength(260, { each: true }) network?: string[];
}

export class TeamConfigDto {
  @IsOptional() @IsObject() @ValidateNested() @Type(() => RoleConfigDto) architect?: RoleConfigDto;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => RoleConfigDto) executor?: RoleConfigDto;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => RoleConfigDto) reviewer?: RoleConfigDto;
}

export class PerRoleBudgetDto {
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000) architect?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000) executor?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000) reviewer?: number;
}

export class BudgetDto {
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000) totalTokens?: number;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => PerRoleBudgetDto) perRole?: PerRoleBudgetDto;
}

export class ReviewTimeoutDto {
  @IsIn(['wait', 'auto_approve', 'auto_deny', 'escalate']) policy!: 'wait' | 'auto_approve' | 'auto_deny' | 'escalate';
  @IsOptional() @IsInt() @Min(1) @Max(30 * 24 * 3600 * 1000) afterMs?: number;
}

export class ReviewPolicyDto {
  @IsOptional() @IsBoolean() humanGate?: boolean;
  @IsOptional() @IsBoolean() allowLauncherToReview?: boolean;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => ReviewTimeoutDto) timeout?: ReviewTimeoutDto;
}

export class RetryDto {
  /** The wait before each retry, in order (one retry per entry). */
  @IsOptional() @IsArray() @ArrayMaxSize(20) @IsInt({ each: true }) @Min(0, { each: true }) @Max(60 * 60 * 1000, { each: true }) delaysMs?: number[];
  // The older exponential form: attempts in all and the first wait, doubling up to maxDelayMs.
  @IsOptional() @IsInt() @Min(1) @Max(20) maxAttempts?: number;
  @IsOptional() @IsInt() @Min(0) @Max(10 * 60 * 1000) baseDelayMs?: number;
  @IsOptional() @IsInt() @Min(0) @Max(60 * 60 * 1000) maxDelayMs?: number;
}

export class ToolApprovalTimeoutDto {
  @IsIn(['wait', 'auto_approve', 'auto_deny']) policy!: 'wait' | 'auto_approve' | 'auto_deny';
  @IsOptional() @IsInt() @Min(1) @Max(30 * 24 * 3600 * 1000) afterMs?: number;
}

export class ToolApprovalDto {
  @IsOptional() @IsIn(['high', 'none']) threshold?: 'high' | 'none';
  @IsOptional() @IsBoolean() allowLauncherToApprove?: boolean;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => ToolApprovalTimeoutDto) timeout?: ToolApprovalTimeoutDto;
}

export class StagnationDto {
  @IsOptional() @IsBoolean() enabled?: boolean;
  @IsOptional() @IsInt() @Min(2) @Max(1000) windowSize?: number;
  @IsOptional() @IsNumber() @Min(0.01) @Max(1) repetitionThreshold?: number;
  @IsOptional() @IsInt() @Min(2) @Max(1000) minCalls?: number;
  @IsOptional() @IsBoolean() cycleDetection?: boolean;
  @IsOptional() @IsInt() @Min(0) @Max(100) maxWarnings?: number;
  @IsOptional() @IsBoolean() repeatedFindings?: boolean;
}

export class ContextWindowDto {
  @IsOptional() @IsInt() @Min(100) @Max(100_000_000) limitTokens?: number;
  @IsOptional() @IsInt() @Min(0) @Max(100_000_000) marginTokens?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1000) keepRecentMessages?: number;
  @IsOptional() @IsInt() @Min(10) @Max(100) compactToPercent?: number;
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(200) summaryModel?: string;
}

export class LaunchRunDto {
  @IsString() @IsNotEmpty() @Matches(VISIBLE_TEXT, { message: 'goal must not be blank' }) @MaxLength(20_000) goal!: string;

  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @IsNotEmpty({ each: true })
  @Matches(VISIBLE_TEXT, { each: true, message: 'acceptance criteria must not be blank' })
  @MaxLength(2000, { each: true })
  acceptanceCriteria!: string[];

  @IsOptional() @IsObject() @ValidateNested() @Type(() => TeamConfigDto) team?: TeamConfigDto;
  @IsOptional() @IsInt() @Min(1) @Max(50) maxIterations?: number;
  @IsOptional() @IsInt() @Min(1000) @Max(7 * 24 * 3600 * 1000) timeoutMs?: number;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => BudgetDto) budget?: BudgetDto;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => ReviewPolicyDto) reviewPolicy?: ReviewPolicyDto;
  @IsOptional() @IsString() @Matches(/^[A-Za-z0-9_.:-]{1,128}$/, { message: 'idempotencyKey must be 1-128 characters of [A-Za-z0-9_.:-]' }) idempotencyKey?: string;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => RetryDto) retry?: RetryDto;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => ToolApprovalDto) toolApproval?: ToolApprovalDto;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => StagnationDto) stagnation?: StagnationDto;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => ContextWindowDto) contextWindow?: ContextWindowDto;
}

export class CancelRunDto {
  @IsOptional() @IsString() @MaxLength(2000) reason?: string;
}
