"""Settings: the operator's (from the environment), the features', each place's, the model
catalogue and the daily token budgets.

- `config`: Settings and load_settings, every variable of the bot, agent/ and memory/.
- `features`: FeatureSettings, the image, live-answer and budget features.
- `place`: PlaceSettings and PlaceSettingsService, a server's and a channel's settings.
- `model_catalog`: ModelCatalog, the models a server may choose and where each is served.
- `budgets`: TokenBudget, a person or a server over its daily allowance is refused.
"""

from __future__ import annotations

from bot.settings.budgets import TokenBudget, UsageReport
from bot.settings.config import Settings, load_settings
from bot.settings.features import FeatureSettings
from bot.settings.model_catalog import ModelCatalog, ModelEntry
from bot.settings.place import InvalidSetting, PlaceSettings, PlaceSettingsService

__all__ = ["FeatureSettings", "InvalidSetting", "ModelCatalog", "ModelEntry", "PlaceSettings",
           "PlaceSettingsService", "Settings", "TokenBudget", "UsageReport", "load_settings"]
