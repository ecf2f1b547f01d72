/**
 * Text from outside (an upstream's error, a gateway's message) cut to a bound before it is kept
 * or shown: at most `maxChars` characters, the last one an ellipsis when something was cut.
 */
export function cutText(text: string, maxChars: number): string {
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}
