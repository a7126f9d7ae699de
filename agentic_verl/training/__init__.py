"""Training-side pieces verl's trainers reach through our entry points: SFT losses (`sft_losses`: verl's token mean,
FunReason's SRML; `v2p_loss`: V2P's pointer + LM loss in a warm-up or full stage), the SFT datasets verl's SFT trainer
loads through `data.custom_cls` (`sft_dataset`: pretokenized rows of `agentic-verl data sft-trajectories`;
`fc_sft_dataset`: function-call messages with SRML's think_mask; `v2p_dataset`: verl's multimodal SFT dataset + pointer
labels) and the SFT trainer entry that selects a loss by config (`sft_trainer`, run by recipes/funreason/ and
recipes/v2p/).
"""

from agentic_verl.training.sft_losses import SFT_LOSSES, SRMLLoss, TokenMeanLoss, build_sft_loss
from agentic_verl.training.v2p_loss import V2PLoss

__all__ = ["SFT_LOSSES", "SRMLLoss", "TokenMeanLoss", "V2PLoss", "build_sft_loss"]
