"""A sequence model on padded token batches: Embedding, LSTM, TransformerEncoder, masking.

Synthetic sentences of 4 to 12 tokens (id 0 is padding) carry two tasks: the sentence label is 1
when it holds more "positive" tokens (ids 2-9) than "negative" ones (ids 10-17), and every token is
tagged 1 when it repeats the token before it. An LSTM (told each sentence's length) encodes the
batch, a TransformerEncoder with a padding attention mask refines it, a masked mean pools the
sentence, and the tagging loss ignores padded positions through ``ignore_index``.
Prints one ``RESULT`` JSON line.
"""

import json

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

PAD, VOCAB, MAX_LEN, IGNORE = 0, 18, 12, -100


def make_corpus(num, seed):
    rng = np.random.RandomState(seed)
    sentences, labels, tags = [], [], []
    for _ in range(num):
        length = rng.randint(4, MAX_LEN + 1)
        tokens = rng.randint(2, VOCAB, size=length)
        repeat = rng.rand(length) < 0.3
        for i in range(1, length):
            if repeat[i]:
                tokens[i] = tokens[i - 1]
        sentences.append(tokens)
        labels.append(int(((tokens < 10).sum()) > ((tokens >= 10).sum())))
        tags.append(np.concatenate([[0], (tokens[1:] == tokens[:-1]).astype("int64")]))
    return sentences, np.array(labels, dtype="int64"), tags


def pad_batch(sentences, tags):
    """Right-pad to the longest sentence: ids with PAD, tags with IGNORE; also the lengths."""
    longest = max(len(s) for s in sentences)
    ids = np.full((len(sentences), longest), PAD, dtype="int64")
    tag_ids = np.full((len(sentences), longest), IGNORE, dtype="int64")
    for i, (sentence, tag) in enumerate(zip(sentences, tags)):
        ids[i, : len(sentence)] = sentence
        tag_ids[i, : len(tag)] = tag
    lengths = np.array([len(s) for s in sentences], dtype="int64")
    return paddle.to_tensor(ids), paddle.to_tensor(tag_ids), paddle.to_tensor(lengths)


class SentenceTagger(nn.Layer):
    def __init__(self, hidden=32):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, hidden, padding_idx=PAD)
        self.lstm = nn.LSTM(hidden, hidden // 2, num_layers=1, direction="bidirect")
        layer = nn.TransformerEncoderLayer(d_model=hidden, nhead=4, dim_feedforward=64, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1)
        self.tagger = nn.Linear(hidden, 2)
        self.classifier = nn.Linear(hidden, 2)

    def forward(self, ids, lengths):
        keep = (ids != PAD).astype("float32")  # [batch, time]
        x = self.embedding(ids)
        x, (h, c) = self.lstm(x, sequence_length=lengths)
        attn_mask = paddle.unsqueeze((1.0 - keep) * -1e9, axis=[1, 2])  # [batch, 1, 1, time]
        x = self.encoder(x, src_mask=attn_mask)
        pooled = (x * keep.unsqueeze(-1)).sum(axis=1) / keep.sum(axis=1, keepdim=True)
        return self.tagger(x), self.classifier(pooled), h


def main():
    paddle.seed(11)
    sentences, labels, tags = make_corpus(512, seed=3)
    test_sentences, test_labels, test_tags = make_corpus(128, seed=4)
    model = SentenceTagger()
    optimizer = paddle.optimizer.Adam(learning_rate=0.005, parameters=model.parameters())
    report = {"losses": []}
    batch_size = 32
    for epoch in range(6):
        order = np.random.RandomState(epoch).permutation(len(sentences))
        epoch_losses = []
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            ids, tag_ids, lengths = pad_batch([sentences[i] for i in idx], [tags[i] for i in idx])
            tag_logits, class_logits, h = model(ids, lengths)
            tag_loss = F.cross_entropy(tag_logits.reshape([-1, 2]), tag_ids.reshape([-1]), ignore_index=IGNORE)
            class_loss = F.cross_entropy(class_logits, paddle.to_tensor(labels[idx]))
            loss = tag_loss + class_loss
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            epoch_losses.append(float(loss))
        report["losses"].append(float(np.mean(epoch_losses)))
        print(f"epoch {epoch} loss {report['losses'][-1]:.4f}")
    report["shapes"] = {"tag_logits": tag_logits.shape, "class_logits": class_logits.shape, "lstm_h": h.shape}

    model.eval()
    with paddle.no_grad():
        ids, tag_ids, lengths = pad_batch(test_sentences, test_tags)
        tag_logits, class_logits, _ = model(ids, lengths)
    valid = tag_ids != IGNORE
    tag_pred = tag_logits.argmax(axis=-1)
    report["tag_accuracy"] = float(paddle.masked_select(tag_pred == tag_ids, valid).astype("float32").mean())
    report["class_accuracy"] = float((class_logits.argmax(axis=-1).numpy() == test_labels).mean())
    report["ignored_positions"] = int((~valid).astype("int64").sum())
    print("RESULT " + json.dumps(report))


if __name__ == "__main__":
    main()
