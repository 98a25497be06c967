/**
 * Runs the tasks handed to it one after the other, in the order given, each once the last has
 * settled (a failure does not stop the next). For a pg.Client that several callers share: pg
 * queues overlapping queries today but warns that pg@9 will refuse them.
 */
export function oneAtATime(): <T>(task: () => Promise<T>) => Promise<T> {
  let previous: Promise<unknown> = Promise.resolve();
  return (task) => {
    const result = previous.then(task);
    previous = result.catch(() => {});
    return result;
  };
}
