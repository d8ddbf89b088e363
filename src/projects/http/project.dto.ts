import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, IsInt, IsNotEmpty, IsObject, IsOptional, IsString, Matches, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { PROJECT_STRATEGIES, type ProjectStrategy } from '../domain/task-graph';
import { VISIBLE_TEXT } from '../../shared/text';

export class ProjectTaskDto {
  @IsString() @Matches(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, { message: "key must be 1-64 letters, digits, '_', '.' or '-' (starting with a letter or digit)" }) key!: string;
  @IsString() @IsNotEmpty() @Matches(VISIBLE_TEXT, { message: 'goal must not be blank' }) @MaxLength(20_000) goal!: string;
  @IsArray() @ArrayMinSize(1) @ArrayMaxSize(100) @IsString({ each: true }) @IsNotEmpty({ each: true }) @Matches(VISIBLE_TEXT, { each: true, message: 'acceptance criteria must not be blank' }) @MaxLength(2000, { each: true }) acceptanceCriteria!: string[];
  @IsOptional() @IsArray() @ArrayMaxSize(100) @IsString({ each: true }) @MaxLength(64, { each: true }) dependsOn?: string[];
}

export class ProjectReviewPolicyDto {
  /** One human review of the whole project when every task has completed (default true). */
  @IsOptional() @IsBoolean() humanGate?: boolean;
  /** Each task run stops at its own review gate instead (default false). */
  @IsOptional() @IsBoolean() perTask?: boolean;
  @IsOptional() @IsBoolean() allowLauncherToReview?: boolean;
}

export class ProjectRunBudgetDto {
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000) totalTokens?: number;
}

export class ProjectRunSettingsDto {
  @IsOptional() @IsInt() @Min(1) @Max(20) maxIterations?: number;
  @IsOptional() @IsInt() @Min(1000) @Max(7 * 24 * 3600 * 1000) timeoutMs?: number;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => ProjectRunBudgetDto) budget?: ProjectRunBudgetDto;
}

export class LaunchProjectDto {
  @IsString() @IsNotEmpty() @Matches(VISIBLE_TEXT, { message: 'goal must not be blank' }) @MaxLength(20_000) goal!: string;
  @IsOptional() @IsArray() @ArrayMaxSize(100) @IsString({ each: true }) @IsNotEmpty({ each: true }) @Matches(VISIBLE_TEXT, { each: true, message: 'acceptance criteria must not be blank' }) @MaxLength(2000, { each: true }) acceptanceCriteria?: string[];
  /** The task graph; without it the architect decomposes the goal. */
  @IsOptional() @IsArray() @ArrayMinSize(1) @ArrayMaxSize(100) @IsObject({ each: true }) @ValidateNested({ each: true }) @Type(() => ProjectTaskDto) tasks?: ProjectTaskDto[];
  @IsOptional() @IsIn(PROJECT_STRATEGIES as ProjectStrategy[]) strategy?: ProjectStrategy;
  @IsOptional() @IsInt() @Min(1) @Max(100) concurrency?: number;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => ProjectReviewPolicyDto) reviewPolicy?: ProjectReviewPolicyDto;
  /** What every task run is launched with. */
  @IsOptional() @IsObject() @ValidateNested() @Type(() => ProjectRunSettingsDto) run?: ProjectRunSettingsDto;
  @IsOptional() @IsString() @Matches(/^[A-Za-z0-9_.:-]{1,200}$/, { message: 'idempotencyKey must be 1-200 letters, digits, _ . : -' }) idempotencyKey?: string;
}

export class CancelProjectDto {
  @IsOptional() @IsString() @MaxLength(2000) reason?: string;
}

export class ProjectReviewDecisionDto {
  @IsString() @IsNotEmpty() @Matches(VISIBLE_TEXT, { message: 'reason must not be blank' }) @MaxLength(4000) reason!: string;
}
