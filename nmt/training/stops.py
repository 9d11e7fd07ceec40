"""How the training loop ends before its step or epoch limit."""


class Stop(Exception):
    """Ends the loop early: a stop signal."""


class EarlyStop(Stop):
    """trainer.patience validations without improvement."""


class BudgetSpent(Stop):
    """trainer.max_minutes used up over the whole run."""
