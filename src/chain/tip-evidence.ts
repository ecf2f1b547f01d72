/**
 * Which chain tip to believe, from what each upstream reports (pure). One poll of one upstream
 * is not evidence enough for a tip far beyond the believed one: a tip or burn height that jumps
 * more than `maxJumpBlocks` is held until it is confirmed, by the same upstream's next poll
 * (seen again, or a little higher) or by another upstream reporting a tip near it. A lower (or
 * sibling) tip from the upstream that leads is a reorg or the correction of a wrong tip, and is
 * believed, unless another upstream still shows the believed tip (then that one leads). Lower
 * tips from other upstreams only mean they are behind.
 */
import type { ChainTip } from './view.js';

export interface TipEvidenceSettings {
  /** Blocks (Stacks or burn) a tip may move ahead of the believed one without confirmation. */
  maxJumpBlocks: number;
}

export interface BelievedTip {
  tip: ChainTip;
  /** The upstream that reported it, which answers the follow-up checks. */
  origin: string;
}

export type Judgement =
  /** The report becomes the tip (a step ahead, a confirmed jump, a reorg or a correction). */
  | { kind: 'believe' }
  /** The tip stays. `leader`: another upstream that still shows it takes over the lead. */
  | { kind: 'keep'; leader?: string }
  /** A jump seen once: not believed (nor passed on as this upstream's height) until confirmed. */
  | { kind: 'hold' };

export class TipEvidence {
  /** The last tip each upstream reported. */
  private readonly latest = new Map<string, ChainTip>();
  /** A jump each upstream reported on its last poll, waiting for confirmation. */
  private readonly held = new Map<string, ChainTip>();

  constructor(private readonly settings: TipEvidenceSettings) {}

  judge(origin: string, tip: ChainTip, believed: BelievedTip | undefined): Judgement {
    const heldBefore = this.held.get(origin);
    this.held.delete(origin);
    this.latest.set(origin, tip);
    if (!believed) return { kind: 'believe' };
    const current = believed.tip;
    if (tip.indexBlockHash === current.indexBlockHash) return { kind: 'keep' };
    if (tip.height > current.height) {
      if (!this.isJump(tip, current)) return { kind: 'believe' };
      if (heldBefore && this.isNear(tip, heldBefore)) return { kind: 'believe' };
      if (this.corroborated(origin, tip)) return { kind: 'believe' };
      this.held.set(origin, tip);
      return { kind: 'hold' };
    }
    // Not ahead: only the leader can take the chain back (a reorg, or the end of a wrong tip).
    if (origin !== believed.origin) return { kind: 'keep' };
    const stillShowing = this.othersShowing(current, origin);
    return stillShowing ? { kind: 'keep', leader: stillShowing } : { kind: 'believe' };
  }

  /** Forgets an upstream's reports (after a reorg its old tips say nothing). */
  forget(origin: string): void {
    this.latest.delete(origin);
    this.held.delete(origin);
  }

  private isJump(tip: ChainTip, from: ChainTip): boolean {
    const max = this.settings.maxJumpBlocks;
    return tip.height - from.height > max || tip.burnHeight - from.burnHeight > max;
  }

  /** The same tip again, or one at most `maxJumpBlocks` past it (blocks kept coming). */
  private isNear(tip: ChainTip, earlier: ChainTip): boolean {
    if (tip.indexBlockHash === earlier.indexBlockHash) return true;
    return tip.height >= earlier.height && tip.burnHeight >= earlier.burnHeight && !this.isJump(tip, earlier);
  }

  /** Another upstream's last report is within `maxJumpBlocks` of this tip. */
  private corroborated(origin: string, tip: ChainTip): boolean {
    const max = this.settings.maxJumpBlocks;
    for (const [other, seen] of this.latest) {
      if (other === origin) continue;
      if (Math.abs(seen.height - tip.height) <= max && Math.abs(seen.burnHeight - tip.burnHeight) <= max) return true;
    }
    return false;
  }

  private othersShowing(current: ChainTip, origin: string): string | undefined {
    for (const [other, seen] of this.latest) {
      if (other !== origin && seen.indexBlockHash === current.indexBlockHash) return other;
    }
    return undefined;
  }
}
