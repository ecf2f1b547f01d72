/**
 * Which chain tip to believe, from what each upstream reports (pure). What one upstream reports
 * is not evidence enough for a tip far beyond the believed one, however often it reports it (an
 * upstream can be wrong for a while): a tip that jumps more than `maxJumpBlocks` Stacks blocks
 * is held, and believed only on evidence that upstream cannot give alone: another upstream
 * reporting a tip near it, or (the tracker's parent walk, jump-walk.ts) the jumped tip's parent
 * chain leading down to the believed tip. A lower (or sibling) tip from the upstream that leads
 * is a reorg or the correction of a wrong tip, and is believed, unless another upstream still
 * shows the believed tip (then that one leads). Lower tips from other upstreams only mean they
 * are behind.
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
  /** A jump no other upstream confirms: not believed (nor passed on as this upstream's height) unless its parent chain leads to the believed tip. */
  | { kind: 'hold' };

export class TipEvidence {
  /** The last tip each upstream reported. */
  private readonly latest = new Map<string, ChainTip>();

  constructor(private readonly settings: TipEvidenceSettings) {}

  judge(origin: string, tip: ChainTip, believed: BelievedTip | undefined): Judgement {
    this.latest.set(origin, tip);
    if (!believed) return { kind: 'believe' };
    const current = believed.tip;
    if (tip.indexBlockHash === current.indexBlockHash) return { kind: 'keep' };
    if (tip.height > current.height) {
      if (!this.isJump(tip, current)) return { kind: 'believe' };
      if (this.corroborated(origin, tip)) return { kind: 'believe' };
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
  }

  /** The highest Stacks and burn heights any upstream reports now, held jumps included. */
  highestReported(): { height: number; burnHeight: number } | undefined {
    let highest: { height: number; burnHeight: number } | undefined;
    for (const tip of this.latest.values()) {
      highest = { height: Math.max(highest?.height ?? 0, tip.height), burnHeight: Math.max(highest?.burnHeight ?? 0, tip.burnHeight) };
    }
    return highest;
  }

  /**
   * The burn tip to believe with a report of `origin`: the one reported when it is no more than
   * maxJumpBlocks above the burn tip believed (or lower), or when another upstream reports one
   * near it; otherwise the believed one stays (`held`). The burn tip is what makes data final,
   * and one upstream's word for a far one is no evidence. It never holds the Stacks tip back:
   * burn blocks without Stacks blocks are invisible to a conditional poll, so an honest burn
   * tip can come in one step of dozens after a stall (a new block's anchor then lifts it).
   */
  vouchedBurnHeight(origin: string, reported: number, believed: number | undefined): { burnHeight: number; held: boolean } {
    const max = this.settings.maxJumpBlocks;
    if (believed === undefined || believed <= 0 || reported - believed <= max) return { burnHeight: reported, held: false };
    for (const [other, seen] of this.latest) {
      if (other !== origin && Math.abs(seen.burnHeight - reported) <= max) return { burnHeight: reported, held: false };
    }
    return { burnHeight: believed, held: true };
  }

  /** Stacks blocks only: a far burn tip is judged apart (vouchedBurnHeight), never a reason to hold the Stacks tip. */
  private isJump(tip: ChainTip, from: ChainTip): boolean {
    return tip.height - from.height > this.settings.maxJumpBlocks;
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
