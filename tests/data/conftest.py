"""Real Multi30k de-en and its 8k joint unigram vocabulary, shared by the data tests."""

import pytest

from nmt.data.corpora import load_multi30k
from nmt.data.tokenizer import Tokenizer
from tests.helpers import MULTI30K


@pytest.fixture(scope="session")
def multi30k_de_en():
    if not MULTI30K.is_dir():
        pytest.skip(f"real-data test: Multi30k not found at {MULTI30K} (../shared/data/multi30k)")
    return load_multi30k("de", "en", path=MULTI30K)


@pytest.fixture(scope="session")
def multi30k_tokenizer(multi30k_de_en, cache_dir):
    return Tokenizer.train(multi30k_de_en.train, vocab_size=8000, model_type="unigram", joint=True,
                           cache_dir=cache_dir)
