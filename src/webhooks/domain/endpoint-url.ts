/**
 * The rule for a webhook endpoint's URL, before any name is resolved: http or https only, a host,
 * no user name or password in it (they would be shown wherever the URL is), at most 2,048
 * characters. Pure; the shell then resolves the host and refuses private addresses
 * (private-address.ts) unless the endpoint allows them.
 */

export const MAX_WEBHOOK_URL_LENGTH = 2048;

export interface WebhookTarget {
  /** The URL as it will be requested (normalised by the WHATWG parser). */
  url: string;
  /** The host without brackets: a name to resolve, or an address literal. */
  host: string;
}

export function parseWebhookUrl(raw: string): { ok: true; target: WebhookTarget } | { ok: false; reason: string } {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) return { ok: false, reason: `url is longer than ${MAX_WEBHOOK_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'url is not a URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: 'url must be http:// or https://' };
  if (!url.hostname) return { ok: false, reason: 'url has no host' };
  if (url.username || url.password) return { ok: false, reason: 'url must not carry a user name or password' };
  return { ok: true, target: { url: url.href, host: url.hostname.replace(/^\[(.*)\]$/, '$1') } };
}
