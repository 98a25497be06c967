import { XMLParser } from 'fast-xml-parser';
import type { OwsService } from './operations.js';

/**
 * OGC exception reports as the gateway writes them: for a request it refuses itself, and in place
 * of every error MapServer writes (its reports and its HTML "MapServer Message" page), so that no
 * answer carries MapServer's version, build options, internal function names or file paths. WMS
 * gets the WMS `ServiceExceptionReport`, WFS and anything else the OWS 1.1 `ExceptionReport`.
 */
export interface OgcException { code: string; locator?: string; text: string }

export interface ExceptionAnswer { status: number; headers: Record<string, string>; body: Buffer }

const escapeXml = (text: string) => text.replace(/[<>&"']/g, (c) => `&${{ '<': 'lt', '>': 'gt', '&': 'amp', '"': 'quot', '\'': 'apos' }[c]};`);

export function exceptionReport(service: OwsService | null, exceptions: OgcException[], status = 400): ExceptionAnswer {
  const body = service === 'WMS'
    ? `<?xml version="1.0" encoding="UTF-8"?>\n<ServiceExceptionReport version="1.3.0" xmlns="http://www.opengis.net/ogc">\n${exceptions.map((e) =>
      `  <ServiceException code="${escapeXml(e.code)}"${e.locator ? ` locator="${escapeXml(e.locator)}"` : ''}>${escapeXml(e.text)}</ServiceException>\n`).join('')}</ServiceExceptionReport>\n`
    : `<?xml version="1.0" encoding="UTF-8"?>\n<ows:ExceptionReport version="2.0.0" xml:lang="en" xmlns:ows="http://www.opengis.net/ows/1.1">\n${exceptions.map((e) =>
      `  <ows:Exception exceptionCode="${escapeXml(e.code)}"${e.locator ? ` locator="${escapeXml(e.locator)}"` : ''}><ows:ExceptionText>${escapeXml(e.text)}</ows:ExceptionText></ows:Exception>\n`).join('')}</ows:ExceptionReport>\n`;
  return { status, headers: { 'content-type': 'text/xml; charset=UTF-8' }, body: Buffer.from(body) };
}

export const refusal = (service: OwsService | null, code: string, locator: string | undefined, text: string) =>
  exceptionReport(service, [{ code, locator, text }]);

/**
 * A MapServer message without what only MapServer's maintainers need: `msSomething(): ` prefixes,
 * a version banner, absolute file paths.
 */
export function cleanMessage(text: string): string {
  const cleaned = text
    .replace(/MapServer version[^\n<]*/gi, '')
    .replace(/\bms[A-Za-z0-9_]*\(\)\s*:?\s*/g, '')
    .replace(/(^|[\s(])\/(?:[\w.@+-]+\/)+[\w.@+-]*/g, '$1[path]')
    .replace(/\s+/g, ' ')
    .trim();
  return cleaned.length > 0 ? cleaned.slice(0, 1000) : 'The request could not be served';
}

const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', removeNSPrefix: true, processEntities: true, ignoreDeclaration: true, ignorePiTags: true, textNodeName: '#text', parseTagValue: false, parseAttributeValue: false, htmlEntities: false });

type Node = Record<string, unknown>;

/** Whether an XML answer of MapServer's is an exception report (looked for in its first 2 KiB). */
export function isExceptionReport(body: Buffer): boolean {
  const head = body.subarray(0, 2048).toString('utf8');
  return /<(?:[\w.-]+:)?(?:ServiceExceptionReport|ExceptionReport)[\s>]/.test(head);
}

/** MapServer's exception report, rewritten by the gateway: the codes and locators kept, the texts cleaned. */
export function rewriteExceptionReport(body: Buffer, status = 400): ExceptionAnswer {
  let document: Node;
  try {
    document = parser.parse(body.toString('utf8')) as Node;
  } catch {
    return refusal(null, 'NoApplicableCode', undefined, 'The request could not be served');
  }
  const wms = document['ServiceExceptionReport'] as Node | undefined;
  const ows = document['ExceptionReport'] as Node | undefined;
  const items = [wms?.['ServiceException'] ?? ows?.['Exception'] ?? []].flat() as Array<Node | string>;
  const exceptions = items.map((item): OgcException => {
    if (typeof item === 'string') return { code: 'NoApplicableCode', text: cleanMessage(item) };
    const texts = [item['ExceptionText'] ?? item['#text'] ?? ''].flat().map((t) => (typeof t === 'object' && t !== null ? String((t as Node)['#text'] ?? '') : String(t)));
    const code = String(item['code'] ?? item['exceptionCode'] ?? 'NoApplicableCode');
    const locator = item['locator'] === undefined ? undefined : String(item['locator']);
    return { code: /^[A-Za-z]{1,64}$/.test(code) ? code : 'NoApplicableCode', locator: locator?.slice(0, 200), text: cleanMessage(texts.join(' ')) };
  });
  if (exceptions.length === 0) exceptions.push({ code: 'NoApplicableCode', text: 'The request could not be served' });
  return exceptionReport(wms ? 'WMS' : 'WFS', exceptions, status);
}

/** MapServer's HTML message page, as an exception report of the gateway's. */
export function rewriteMessagePage(body: Buffer, service: OwsService | null): ExceptionAnswer {
  const html = body.subarray(0, 64 * 1024).toString('utf8');
  const inBody = /<body[^>]*>([\s\S]*?)<\/body>/i.exec(html)?.[1] ?? '';
  const text = inBody.replace(/<!--[\s\S]*?-->/g, '').replace(/<[^>]*>/g, ' ');
  return refusal(service, 'NoApplicableCode', undefined, cleanMessage(text));
}
