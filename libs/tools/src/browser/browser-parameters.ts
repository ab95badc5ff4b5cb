import { z } from 'zod';

/** An element id from the latest page text: `e12`, or `f1e3` for one inside a frame. */
const ElementRef = z
  .string()
  .regex(/^(?:f\d+)?e\d+$/, 'an element id from the page text, such as e12 (the [ref=…] of the element)')
  .describe('The element id shown as [ref=…] in the latest page text, e.g. "e12".');

export const NavigateAction = z.strictObject({
  type: z.literal('navigate'),
  url: z.string().min(1).max(8_192).describe('http(s) URL, a file:// URL of a file in the workspace, or about:blank.'),
});
export const ClickAction = z.strictObject({ type: z.literal('click'), element: ElementRef });
export const TypeAction = z.strictObject({
  type: z.literal('type'),
  element: ElementRef,
  text: z.string().max(100_000).describe('Replaces what the field holds.'),
  submit: z.boolean().default(false).describe('Press Enter afterwards (submits most forms).'),
});
export const ScrollAction = z.strictObject({
  type: z.literal('scroll'),
  direction: z.enum(['up', 'down']),
});
export const BackAction = z.strictObject({ type: z.literal('back') });
export const ReadAction = z.strictObject({ type: z.literal('read') });
export const ScreenshotAction = z.strictObject({ type: z.literal('screenshot') });

export const BrowserAction = z.discriminatedUnion('type', [
  NavigateAction,
  ClickAction,
  TypeAction,
  ScrollAction,
  BackAction,
  ReadAction,
  ScreenshotAction,
]);
export type BrowserAction = z.infer<typeof BrowserAction>;

export const BrowserParameters = z.object({
  action: BrowserAction.describe('What to do, chosen by its `type`.'),
});
export type BrowserParameters = z.infer<typeof BrowserParameters>;
