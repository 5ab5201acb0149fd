/** A spinner on stderr while something runs; nothing at all when stderr is not a terminal. */
export interface Progress {
  update(text: string): void;
  succeed(text: string): void;
  stop(): void;
}

export async function progress(text: string, enabled: boolean): Promise<Progress> {
  if (!enabled || !process.stderr.isTTY) {
    return { update: () => undefined, succeed: () => undefined, stop: () => undefined };
  }
  const { default: ora } = await import('ora');
  const spinner = ora({ text, stream: process.stderr }).start();
  return {
    update: (t) => void (spinner.text = t),
    succeed: (t) => void spinner.succeed(t),
    stop: () => void spinner.stop(),
  };
}
