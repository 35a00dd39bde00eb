"""LangChain's own standard tests for vector stores (PyPI ``langchain-tests``,
``VectorStoreIntegrationTests``) against :class:`memdb.langchain.MemdbVectorStore`.

Each test gets a new, empty store. memdb embeds with its own model, the
local ONNX model (scripts/install-model.sh installs it); the ``embedding``
the suite offers is accepted and not used (SPEC §29). The suite expects
``similarity_search`` to return the ``k`` nearest documents whatever their
score: memdb's vector side keeps the neighbours of positive similarity,
which with the local model is every document."""

import tempfile

import pytest
from langchain_tests.integration_tests import VectorStoreIntegrationTests

import memdb
from memdb.langchain import MemdbVectorStore


class TestMemdbVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture()
    def vectorstore(self):
        with tempfile.TemporaryDirectory() as tmp:
            db = memdb.open(tmp, embedder="local")
            try:
                yield MemdbVectorStore(db, embedding=self.get_embeddings())
            finally:
                db.close()
