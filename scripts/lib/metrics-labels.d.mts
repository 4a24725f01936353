export interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
}
export function parseExposition(text: string): Series[];
export function labelProblems(series: Series[], operationIds: string[]): string[];
