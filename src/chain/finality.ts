/**
 * The finality watermark: data anchored at least `burnConfirmations` burn blocks deep can no
 * longer change. The highest Stacks block in that burn block is the final Stacks height.
 * The upstream is asked through `stacksHeightAtBurn`, so this module holds no I/O.
 */
export type StacksHeightAtBurn = (burnHeight: number) => Promise<number | undefined>;

export class FinalityWatermark {
  private stacksHeight: number | undefined;
  private burnHeightChecked: number | undefined;

  constructor(private readonly burnConfirmations: number) {}

  /** Burn height at or below which anchored data is final, for a burn tip. */
  finalBurnHeight(burnTip: number): number {
    return burnTip - this.burnConfirmations;
  }

  get finalStacksHeight(): number | undefined {
    return this.stacksHeight;
  }

  /** Asks once per new burn block; a burn block without Stacks blocks keeps the previous (still final) watermark. */
  async advance(burnTip: number, stacksHeightAtBurn: StacksHeightAtBurn): Promise<void> {
    const target = this.finalBurnHeight(burnTip);
    if (target < 0 || target === this.burnHeightChecked) return;
    const height = await stacksHeightAtBurn(target);
    if (height !== undefined) this.stacksHeight = height;
    this.burnHeightChecked = target;
  }

  /** Finality learned on a branch a reorg abandoned cannot be trusted above the fork. */
  lowerTo(forkHeight: number): void {
    if (this.stacksHeight !== undefined && this.stacksHeight > forkHeight) this.stacksHeight = forkHeight;
  }
}
