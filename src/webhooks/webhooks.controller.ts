import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { May } from '../auth/auth.guard';
import { CurrentIdentity } from '../auth/current-identity.decorator';
import type { Identity } from '../auth/identity';
import { parseIntParam } from '../http/int-param';
import { WEBHOOK_EVENT_TYPES } from './domain/webhook-events';
import { MAX_WEBHOOK_URL_LENGTH } from './domain/endpoint-url';
import type { DeliveryRecord } from './store/webhook-store.port';
import { MAX_DELIVERIES_LISTED, WebhooksService, type AddedWebhook, type ListedWebhook } from './webhooks.service';

export class AddWebhookDto {
  /** http:// or https://; its host must resolve to public addresses unless allowPrivate. */
  @IsString() @MaxLength(MAX_WEBHOOK_URL_LENGTH) url!: string;
  @IsArray() @ArrayMinSize(1) @ArrayMaxSize(WEBHOOK_EVENT_TYPES.length) @IsIn(WEBHOOK_EVENT_TYPES, { each: true }) events!: string[];
  /** Reach private, loopback and link-local addresses (a receiver on this network). */
  @IsOptional() @IsBoolean() allowPrivate?: boolean;
}

export class DeliveriesQueryDto {
  /** Read with parseIntParam: 1 to 100, default 20. */
  @IsOptional() @IsString() limit?: string;
}

/** Outbound webhooks, for admins: endpoints and their delivery logs. */
@Controller('v1/webhooks')
@May('manageWebhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  /** `201` with the endpoint and its `secret` (`whsec_…`): shown only in this answer. */
  @Post()
  @HttpCode(201)
  add(@Body() body: AddWebhookDto, @CurrentIdentity() who: Identity): Promise<AddedWebhook> {
    return this.webhooks.add({ url: body.url, events: body.events, allowPrivate: body.allowPrivate, by: who.id });
  }

  @Get()
  async list(): Promise<{ webhooks: ListedWebhook[] }> {
    return { webhooks: await this.webhooks.list() };
  }

  @Delete(':id')
  @HttpCode(204)
  async remove(@Param('id') id: string): Promise<void> {
    await this.webhooks.remove(id);
  }

  /** The endpoint's last deliveries, newest first: status, attempts, response code, next retry. */
  @Get(':id/deliveries')
  async deliveries(@Param('id') id: string, @Query() query: DeliveriesQueryDto): Promise<{ deliveries: DeliveryRecord[] }> {
    const limit = parseIntParam('limit', query.limit, 20, 1, MAX_DELIVERIES_LISTED);
    return { deliveries: await this.webhooks.deliveries(id, limit) };
  }
}
