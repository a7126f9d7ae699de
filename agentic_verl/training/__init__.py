"""Training-side pieces verl's trainers reach through our entry points: SFT losses (`sft_losses`: verl's token mean,
FunReason's SRML) and the SFT trainer entry that selects one by config (`sft_trainer`, run by recipes/funreason/).
"""

from agentic_verl.training.sft_losses import SFT_LOSSES, SRMLLoss, TokenMeanLoss, build_sft_loss

__all__ = ["SFT_LOSSES", "SRMLLoss", "TokenMeanLoss", "build_sft_loss"]
