/**
 * What is wrong with an operator's fallbacks (`{"default": ["backup"]}`), each issue naming
 * `fallbacks.<profile>[.N]`: a profile that is not one of `profiles`, a fallback that is not one,
 * is the profile itself, or is named twice. A fallback's own fallbacks are never followed, so two
 * profiles may back each other up without a loop.
 */
export function fallbackIssues(
  fallbacks: Readonly<Record<string, readonly string[]>>,
  profiles: readonly string[],
): { readonly path: string; readonly message: string }[] {
  const known = `the profiles: ${profiles.join(', ')}`;
  return Object.entries(fallbacks).flatMap(([name, names]) => [
    ...(profiles.includes(name)
      ? []
      : [{ path: `fallbacks.${name}`, message: `no model profile "${name}" to fall back from (${known})` }]),
    ...names.flatMap((fallback, index) => {
      const path = `fallbacks.${name}.${index}`;
      if (fallback === name)
        return [{ path, message: `"${name}" is the profile itself: a profile falls back on others` }];
      if (!profiles.includes(fallback)) return [{ path, message: `no model profile "${fallback}" (${known})` }];
      return names.indexOf(fallback) === index ? [] : [{ path, message: `"${fallback}" is named twice` }];
    }),
  ]);
}
